"""The cheaper-target lesson's figures (specdec/measure/weight_formats.py): bytes a token per format, measured or
modelled steps, v(K) from a tuning record, and how c, the best K and the speedup move as the target gets cheaper."""
import pytest

from specdec.engine.theory import theoretical_speedup
from specdec.measure import weight_formats as wf
from specdec.measure.cost_model import Network
from specdec.runners.tuning import CandidateFigures, TunedPath

NET = Network("smollm2-like", layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64, intermediate=1536,
              head_rows=49152)


def record(*candidates) -> TunedPath:
    return TunedPath(key={}, dtype="q4_1", threads=1, why="", candidates=list(candidates), kernels="lab")


def test_bytes_per_token_follow_each_formats_bytes_per_weight():
    reads = {fmt.key: wf.bytes_per_token(NET, fmt) for fmt in wf.FORMATS}
    assert reads["f32"] == pytest.approx(2 * reads["f16"])
    assert reads["f16"] > reads["q8_0"] > reads["q4_1"]
    head = NET.head_params * wf.Q8_0_BYTES  # the published file's head stays Q8_0
    assert reads["q4_1"] == pytest.approx(NET.layers * NET.layer_params * wf.Q4_1_BYTES + head)


def test_a_cheaper_target_raises_c_and_lowers_the_best_k_and_the_speedup():
    lesson = wf.cheaper_target(NET, alpha=0.7, draft_token_s=2e-3, bandwidth=10e9, overhead_s=1e-3)
    by_key = {p.format.key: p for p in lesson.points}
    heavy, light = by_key["f32"], by_key["q4_1"]
    assert light.step_s < heavy.step_s and light.c > heavy.c
    assert light.best_k <= heavy.best_k and light.best_speedup < heavy.best_speedup
    assert not any(p.step_measured for p in lesson.points)


def test_a_measured_step_replaces_the_modelled_one_for_its_format_only():
    lesson = wf.cheaper_target(NET, 0.7, 2e-3, 10e9, measured_step_s={"q4_1": 0.010})
    by_key = {p.format.key: p for p in lesson.points}
    assert by_key["q4_1"].step_measured and by_key["q4_1"].step_s == 0.010 and by_key["q4_1"].c == pytest.approx(0.2)
    assert not by_key["f16"].step_measured


def test_a_formats_own_measured_v_wins_over_the_shared_v_of_k():
    lesson = wf.cheaper_target(NET, 0.8, 1e-3, 10e9, measured_step_s={"q4_1": 0.01}, ks=(1, 2),
                               measured_v={"q4_1": lambda k: 2.0})
    q4 = next(p for p in lesson.points if p.format.key == "q4_1")
    f16 = next(p for p in lesson.points if p.format.key == "f16")
    assert q4.v_measured and q4.v_at_best == 2.0 and q4.speedups[0] == pytest.approx(theoretical_speedup(0.8, 1, 0.1, 2.0))
    assert not f16.v_measured and f16.v_at_best == 1.0


def test_steps_and_v_come_from_each_formats_fastest_candidate_that_may_be_chosen():
    path = record(CandidateFigures("q4_1", 1, step_ms=20.0, verify_ms=40.0, wide_ms=100.0, kernels="lab"),
                  CandidateFigures("q4_1", 2, step_ms=10.0, verify_ms=30.0, wide_ms=50.0, kernels="lab"),
                  CandidateFigures("float32", 1, step_ms=5.0, verify_ms=6.0, excluded="not identical"),
                  CandidateFigures("float32", 2, step_ms=30.0, verify_ms=45.0, kernels="lab"),
                  CandidateFigures("bfloat16", 1, step_ms=1.0, verify_ms=1.0))
    assert wf.steps_from_tuning(path) == {"q4_1": 0.010, "f16": 0.030}
    v = wf.v_from_tuning(path)
    assert set(v) == {"q4_1", "f16"}
    assert v["q4_1"](0) == pytest.approx(1.0) and v["q4_1"](4) == pytest.approx(3.0)  # 1 and 5 rows: the timed ones
    assert v["q4_1"](2) == pytest.approx(2.0)  # 3 rows: halfway between 1 and 5
    assert v["q4_1"](8) == pytest.approx(5.0) and v["q4_1"](12) == pytest.approx(7.0)  # the 9-row forward, then on
    assert v["f16"](8) == pytest.approx(1 + 0.5 * 8 / 4)  # no wide forward: the 5-row segment goes on


@pytest.mark.parametrize("label, key", [("Q4_1 as published", "q4_1"), ("Q8_0 requantised from Q4_1", "q8_0"),
                                        ("float16 from Q4_1", "f16"), ("float32", "f32"), ("bfloat16", None),
                                        ("", None)])
def test_a_runs_weights_label_names_its_lesson_format(label, key):
    assert wf.format_key(label) == key
