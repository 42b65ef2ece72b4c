"""Race tab: both lanes advance by their own compute clocks and stream side by side."""
from specdec.engine.events import DecodeSettings
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.race.callbacks import Lane, next_lane, race

from tests.ui_fakes import FakeEngine, FakeModel

ARGS = dict(prompt="x = 1", clean_whitespace=False, target="lab-target", draft="lab-draft", target_custom="",
            draft_custom="", k=4, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=16, seed=0)


def lane(name, draft, engine=FakeEngine()):
    return Lane(name, engine.start(FakeModel("t"), draft, [1], DecodeSettings(k=4, max_new_tokens=16)))


def test_the_lane_with_less_compute_so_far_runs_next():
    slow, fast = lane("base", None), lane("spec", FakeModel("d"))
    slow.advance()
    assert next_lane([slow, fast]) is fast


def test_finished_lanes_are_not_scheduled():
    base, spec = lane("base", None), lane("spec", FakeModel("d"))
    base.done = True
    assert next_lane([base, spec]) is spec
    spec.done = True
    assert next_lane([base, spec]) is None


def race_lab():
    return Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0)


def test_race_streams_both_lanes_until_both_finish():
    updates = list(race(race_lab(), Session(), **ARGS))
    final_lanes = [u for u in updates if "race_base" in u][-1]
    assert "Target only (finished)" in final_lanes["race_base"] and "Speculative (finished)" in final_lanes["race_spec"]
    assert "tok/s" in final_lanes["race_base"] and sum("race_spec" in u for u in updates) > 2


def test_the_race_verdict_is_the_measured_speedup_with_its_interval():
    summary = list(race(race_lab(), Session(), **ARGS))[-1]["race_summary"]
    assert "Measured speedup:" in summary and "95% interval" in summary and "is faster" in summary
    assert 'class="key-result"' in summary and "In this race:" in summary


def test_race_and_generate_show_the_same_figure_for_the_same_configuration():
    lab, session = race_lab(), Session()
    cards = list(lab.generate(session, **ARGS))[-1]["cards"]
    summary = list(race(lab, session, **ARGS))[-1]["race_summary"]
    (measurement,) = session.measurements.values()
    est = measurement.estimate()
    assert est.describe() in summary and f"{est.ratio:.2f}×" in cards and f"{est.low:.2f}–{est.high:.2f}" in cards


def test_a_stopped_race_gives_no_verdict():
    lab, session = race_lab(), Session()
    stream = race(lab, session, **{**ARGS, "max_new_tokens": 200})
    next(u for u in stream if "race_spec" in u)
    lab.stop(session)
    final = list(stream)[-1]
    assert "no verdict for a partial race" in final["race_summary"] and "faster" not in final["race_summary"]
    assert "Stopped" in final["status"]


def test_a_stop_that_arrives_after_both_lanes_finished_keeps_the_race_whole():
    lab, session = race_lab(), Session()
    stream = race(lab, session, **ARGS)
    next(u for u in stream if "Speculative (finished)" in u.get("race_spec", "")
         and "Target only (finished)" in u.get("race_base", ""))
    lab.stop(session)
    rest = list(stream)
    assert "no verdict for a partial race" not in rest[-1]["race_summary"]
    assert "Race finished" in rest[0]["status"]


def test_the_target_only_lane_has_no_step_marks_but_the_speculative_lane_does():
    final = [u for u in race(race_lab(), Session(), **ARGS) if "race_base" in u][-1]
    assert "step-mark" not in final["race_base"] and "step-mark" in final["race_spec"]


def test_race_lanes_render_tokens_with_their_classes():
    final = [u for u in race(race_lab(), Session(), **ARGS) if "race_base" in u][-1]
    assert "tok-target" in final["race_base"] and "tok-accepted" in final["race_spec"]


def test_race_with_an_incompatible_pair_shows_the_error():
    updates = list(race(Lab(FakeEngine()), Session(), **{**ARGS, "draft": "incompatible"}))
    assert "different tokenizers" in updates[-1]["error"]
