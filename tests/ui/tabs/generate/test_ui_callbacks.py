"""Generate-tab callbacks as plain generators, driven by a scripted engine (no server, no torch)."""
import inspect
import json

from specdec.ui.lab import make_settings
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.throttle import Throttle

import pytest

from tests.ui_fakes import FakeEngine

ARGS = dict(prompt="def f(x):", clean_whitespace=False, target="lab-target", draft="lab-draft", target_custom="",
            draft_custom="", k=4, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=24, seed=0)


@pytest.fixture
def engine():
    return FakeEngine()


@pytest.fixture
def lab(engine):
    return Lab(engine, token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)


def run(lab, session=None, **changes):
    return list(lab.generate(session or Session(), **{**ARGS, **changes}))


def baselines_run(engine):
    return [g for g in engine.generations if g.draft is None]


def test_streams_at_least_one_token_update_per_step(lab, engine):
    updates = run(lab)
    streamed = [u for u in updates if "tokens" in u and "plot_acceptance" not in u]
    assert len(streamed) >= len(engine.generations[0].events)


def test_streamed_updates_are_light_and_plots_come_once_the_run_ends(lab):
    updates = run(lab)
    heavy = next(i for i, u in enumerate(updates) if "plot_acceptance" in u)
    assert all("steps_table" not in u for u in updates[:heavy])
    assert {"plot_acceptance", "plot_lengths", "plot_throughput", "plot_memory", "steps_table",
            "exports"} <= set(updates[heavy])


def test_no_timed_run_starts_before_the_plots_are_sent(lab, engine):
    for update in lab.generate(Session(), **ARGS):
        if "plot_acceptance" in update:
            assert len(engine.generations) == 1  # the streamed run only
            return
    pytest.fail("no plots were sent")


def test_while_measuring_only_the_cards_and_status_change(lab):
    updates = run(lab)
    heavy = next(i for i, u in enumerate(updates) if "plot_acceptance" in u)
    measuring = updates[heavy + 1:-1]
    assert measuring and all(set(u) == {"cards", "status"} for u in measuring)
    assert "measuring…" in measuring[0]["cards"]


def test_the_speedup_card_shows_the_median_its_interval_and_the_repeats(lab):
    cards = run(lab)[-1]["cards"]
    assert "×" in cards and "95% interval" in cards and "repeats" in cards and 'data-verdict="faster"' in cards


def test_the_final_status_says_the_timing_comes_from_repeats_apart_from_the_streamed_run(lab):
    status = run(lab)[-1]["status"]
    assert status.startswith('<div class="status-line">Done.') and "apart from the streamed run" in status


def test_the_final_status_names_the_pair_that_ran(lab):
    status = run(lab)[-1]["status"]
    assert "Ran lab-target with draft lab-draft." in status


def test_timed_target_only_runs_produce_as_many_tokens_as_the_speculative_ones(lab, engine):
    run(lab)
    timed = engine.generations[1:]
    assert len({g.result().metrics.new_tokens for g in timed}) == 1


def test_cards_label_the_acceptance_rate_and_alpha_with_their_definitions(lab):
    cards = run(lab)[-1]["cards"]
    assert "Acceptance rate (accepted / drafted)" in cards and "α (accepted / evaluated)" in cards


def test_final_cards_compare_tokens_per_forward_with_the_theory_at_measured_alpha(lab):
    cards = run(lab)[-1]["cards"]
    assert "theory E =" in cards and "(accepted / evaluated)" in cards


def test_the_theory_note_is_left_out_where_the_drafter_proposed_far_fewer_than_k():
    from specdec.ui.views.cards import theory_note

    from tests.ui_fakes import make_step
    sparse = [make_step(i, [(" a", True)] if i % 3 == 0 else [], ("b", "bonus")) for i in range(6)]
    assert "no i.i.d. theory" in theory_note(sparse, max_new_tokens=64)


def test_a_configuration_is_measured_once_per_session(lab, engine):
    session = Session()
    first = run(lab, session)[-1]["cards"]
    runs = len(engine.generations)
    second = run(lab, session)[-1]["cards"]
    assert len(engine.generations) == runs + 1 and first == second  # + the streamed run


def test_another_k_is_another_configuration(lab, engine):
    session = Session()
    run(lab, session)
    runs = len(engine.generations)
    run(lab, session, k=2)
    assert len(baselines_run(engine)) > 0 and len(engine.generations) > runs + 1


def test_sessions_do_not_share_runs_or_measurements(lab, engine):
    first, second = Session(), Session()
    run(lab, first)
    assert second.last_run is None and not second.measurements
    run(lab, second)
    assert first.last_run is not second.last_run and second.measurements


def test_stop_during_the_measurement_keeps_the_estimate_so_far(lab):
    session = Session()
    stream = lab.generate(session, **ARGS)
    while "1 repeat; a 95% interval needs 6 · measuring…" not in next(stream).get("cards", ""):
        pass  # the first timed pair is in
    lab.stop(session)
    final = list(stream)[-1]
    assert "Stopped the measurement" in final["status"] and "×" in final["cards"]


def test_the_json_export_has_the_baseline_the_speedup_and_its_interval(lab):
    exports = run(lab)[-1]["exports"]
    report = json.loads(open(next(p for p in exports if p.endswith(".json"))).read())
    assert report["speedup"]["ratio"] > 1 and report["speedup"]["low"] is not None
    assert report["baseline"]["new_tokens"] == report["speedup"]["new_tokens"]
    assert "accepted / evaluated" in report["definitions"]["alpha"] and report["alpha"] is not None


def test_model_loading_reports_progress(lab):
    statuses = [u["status"] for u in run(lab) if "status" in u]
    assert any("Loading lab-target" in s for s in statuses) and any("Loading lab-draft" in s for s in statuses)


@pytest.mark.parametrize("changes, message", [
    (dict(prompt="   "), "prompt is empty"),
    (dict(draft="unknown-model"), "Unknown model"),
    (dict(target_custom="offline-org/preset"), "cannot be reached"),
    (dict(draft="incompatible-draft"), "different tokenizers"),
])
def test_bad_input_shows_an_error_and_touches_nothing_else(lab, changes, message):
    updates = run(lab, **changes)
    assert message in updates[-1]["error"] and "error-box" in updates[-1]["error"]
    assert all(set(u) <= {"error", "status", "cleanup"} for u in updates)


def test_out_of_memory_is_reported_clearly(lab, engine):
    def boom(*args, **kwargs):
        raise MemoryError()
    engine.start = boom
    assert "Out of memory" in run(lab)[-1]["error"]


def test_a_failed_run_keeps_the_previous_run_for_the_inspector(lab):
    session = Session()
    run(lab, session)
    previous = session.last_run
    run(lab, session, prompt="")
    assert session.last_run is previous


def test_whitespace_cleanup_reports_what_changed_and_cleans_the_prompt(lab, engine):
    updates = run(lab, prompt="def  f(x):  ", clean_whitespace=True)
    assert "collapsed 1 run" in updates[0]["cleanup"] and "trailing" in updates[0]["cleanup"]
    assert engine.generations[0].target.decode(engine.generations[0].ids) == "def f(x):"


def test_stop_ends_the_run_after_the_current_step_and_keeps_what_was_shown(lab):
    session = Session()
    stream = lab.generate(session, **{**ARGS, "max_new_tokens": 200})
    while "tokens" not in next(stream):
        pass
    lab.stop(session)
    rest = list(stream)
    assert session.last_run.stopped and "Stopped" in rest[-1]["status"]
    assert len(session.last_run.events) <= 2 and "tokens" in rest[-1]


def test_a_stop_that_arrives_after_the_last_step_leaves_the_run_finished(lab, engine):
    session = Session()
    stream = lab.generate(session, **ARGS)
    while not (engine.generations and engine.generations[0].events and engine.generations[0].events[-1].finished):
        next(stream)
    lab.stop(session)
    final = list(stream)[-1]
    assert not session.last_run.stopped and "partial run" not in final["status"]


def test_stop_when_nothing_runs_changes_nothing(lab):
    session = Session()
    assert lab.stop(session) == {} and not session.stop_requested


def test_a_stop_from_before_a_run_started_is_forgotten(lab):
    session = Session()
    session.request_stop("an-earlier-run")
    run(lab, session)
    assert not session.last_run.stopped


def test_a_stop_pressed_during_one_run_that_lands_after_the_next_run_started_does_not_stop_it(lab):
    session = Session()
    run(lab, session)
    pressed_during = session.run_id
    stream = lab.generate(session, **{**ARGS, "seed": 1})
    next(stream)  # the next run is in progress when the late Stop arrives
    assert session.running and session.run_id != pressed_during
    lab.stop(session, pressed_during)
    final = list(stream)[-1]
    assert not session.last_run.stopped and final["status"].count("Done.") == 1


def test_a_stop_carrying_the_id_of_the_run_in_progress_stops_it(lab):
    session = Session(next_run_id="run-2")
    stream = lab.generate(session, **{**ARGS, "max_new_tokens": 200})
    while "tokens" not in next(stream):
        pass
    lab.stop(session, "run-2")
    assert "Stopped" in list(stream)[-1]["status"] and session.last_run.stopped


def test_a_stop_pressed_while_its_run_waits_in_the_queue_stops_it_when_it_starts(lab):
    session = Session()
    lab.stop(session, "run-3")
    session.next_run_id = "run-3"
    updates = run(lab, session, max_new_tokens=200)
    assert session.last_run.stopped and len(session.last_run.events) == 1 and "Stopped" in updates[-1]["status"]


def test_the_run_id_input_reaches_the_session_and_not_the_callback(lab):
    from specdec.ui.run_ids import tied_to_run

    tied = tied_to_run(lab.generate)
    assert list(inspect.signature(tied).parameters)[-1] == "run_id"
    session = Session()
    list(tied(session, *ARGS.values(), "constant", True, "from-the-browser"))
    assert session.run_id == "from-the-browser" and session.next_run_id is None


def test_settings_switch_off_top_p_at_one_and_top_k_at_zero():
    s = make_settings(4, 0.7, 1.0, 0, 64, 3)
    assert (s.top_p, s.top_k, s.k, s.temperature, s.seed) == (None, None, 4, 0.7, 3)


def test_throttle_lets_one_update_through_per_interval():
    now = [0.0]
    throttle = Throttle(0.5, clock=lambda: now[0])
    assert throttle.ready() and not throttle.ready()
    now[0] = 0.6
    assert throttle.ready()


def test_inspector_opens_after_a_run_on_the_first_step_with_a_rejection(lab):
    session = Session()
    run(lab, session, k=4)
    view = lab.first_interesting_step(session)
    assert view["inspect_step"]["value"] == 0 and view["inspect_pos"]["value"] == "d2"
    assert "tok-step-current" in view["replay"] and "rejected" in view["inspect_details"]


def test_step_through_moves_one_step_and_stays_in_range(lab):
    session = Session()
    run(lab, session)
    last = len(session.last_run.events) - 1
    assert lab.step_by(session, 0, 1)["inspect_step"]["value"] == 1
    assert lab.step_by(session, last, 1)["inspect_step"]["value"] == last
    assert lab.step_by(session, 0, -1)["inspect_step"]["value"] == 0


def test_clicking_a_token_opens_the_inspector_on_it(lab):
    class Click:
        index = [1, "final"]
    session = Session()
    run(lab, session)
    view = lab.select_token(session, Click())
    assert view["inspector_box"]["open"] and view["inspect_pos"]["value"] == "final"
    assert "residual" in view["inspect_details"] or "argmax" in view["inspect_details"]


def test_inspector_before_any_run_asks_for_one(lab):
    assert "Run a generation first" in lab.show_step(Session(), 0)["step_story"]
