"""Race tab: both lanes advance by their own compute clocks and stream side by side."""
from specdec.ui.callbacks import Lab
from specdec.ui.race import Lane, next_lane, race
from specdec.ui.session import Session
from ui_fakes import FakeEngine, FakeModel
from specdec.events import DecodeSettings

ARGS = dict(prompt="x = 1", clean_whitespace=False, target="lab-target", draft="lab-draft", target_custom="",
            draft_custom="", k=4, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=16, seed=0)


def lane(name, draft, engine=FakeEngine()):
    return Lane(name, engine.Generation(FakeModel("t"), draft, [1], DecodeSettings(k=4, max_new_tokens=16)))


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


def test_race_streams_both_lanes_until_both_finish_and_states_the_speedup():
    updates = list(race(Lab(FakeEngine(), token_interval_s=0.0), Session(), **ARGS))
    final = updates[-1]
    assert "Target only (finished)" in final["race_base"] and "Speculative (finished)" in final["race_spec"]
    assert "tok/s" in final["race_base"] and "× the target-only speed" in final["race_summary"]
    assert sum("race_spec" in u for u in updates) > 2


def test_race_lanes_render_tokens_with_their_classes():
    final = list(race(Lab(FakeEngine(), token_interval_s=0.0), Session(), **ARGS))[-1]
    assert "tok-target" in final["race_base"] and "tok-accepted" in final["race_spec"]


def test_race_with_an_incompatible_pair_shows_the_error():
    updates = list(race(Lab(FakeEngine()), Session(), **{**ARGS, "draft": "incompatible"}))
    assert "different tokenizers" in updates[-1]["error"]
