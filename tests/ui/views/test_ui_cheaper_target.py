"""The "Why this speedup?" tab's cheaper-target view (specdec/ui/views/cheaper_target.py) on made-up figures: a fixed
device, a made-up tuning record (the steps `tune` timed) and made-up measured rows (the tab's Measure)."""
from dataclasses import replace
from types import SimpleNamespace

import pytest

from specdec.measure import cost_model as cm
from specdec.measure import weight_formats as wf
from specdec.measure.device_presets import THIS_MACHINE, Device
from specdec.runners.tuning import CandidateFigures, TunedPath
from specdec.ui.cost_prediction import Measured
from specdec.ui.views import cheaper_target as view

NET = cm.Network("t", layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64, intermediate=1536, head_rows=49152)
DRAFT = cm.DraftShape("d", "EAGLE", cm.Network("d", layers=1, hidden=576, heads=9, kv_heads=3, head_dim=64,
                                                 intermediate=1536, head_rows=8192))
HERE = Device(THIS_MACHINE, "this test machine", bandwidth=10e9, peak_flops={"float32": 50e9},
              forward_overhead_s=1e-4, layer_overhead_s=1e-5, source="fixed for the test", measured=True)
TUNED = TunedPath(key={}, dtype="q4_1", threads=2, why="", kernels="lab", candidates=[
    CandidateFigures("q4_1", 2, step_ms=8.0, verify_ms=20.0, wide_ms=36.0, kernels="lab"),
    CandidateFigures("float32", 2, step_ms=16.0, verify_ms=20.0, wide_ms=28.0, kernels="lab")])


def prediction(k: int = 3) -> cm.Prediction:
    return cm.predict(NET, DRAFT, HERE, "float32", k)


def rows(*points):
    """SweepRow-like made-up measured points: (K, speedup, low, high, c)."""
    return tuple(SimpleNamespace(k=k, speedup=s, speedup_low=lo, speedup_high=hi, c=c) for k, s, lo, hi, c in points)


MEASURED_Q4 = Measured("t", "d", rows((1, 1.10, 1.05, 1.15, 0.25), (2, 1.02, 0.97, 1.08, 0.25)), 20, "float32",
                       step_s=0.008, weights="Q4_1 as published")


def test_the_table_gives_bytes_per_token_for_every_weight_format():
    table = view.render_formats(prediction(), 0.7, None)["formats_table"]
    assert list(table["weights"]) == [fmt.label for fmt in wf.FORMATS]
    expected = [round(wf.bytes_per_token(NET, fmt) / 1e6, 3) for fmt in wf.FORMATS]
    assert list(table["MB read a token"]) == pytest.approx(expected)
    assert list(table["MB read a token"]) == sorted(table["MB read a token"], reverse=True)


def test_without_a_tuning_record_every_step_is_modelled_and_the_note_says_how_to_measure():
    out = view.render_formats(prediction(), 0.7, None)
    assert set(out["formats_table"]["step from"]) == {"modelled (bytes / bandwidth + overhead)"}
    assert "python -m specdec tune" in out["formats_note"] and "predicted" in out["formats_note"]


def test_the_tuning_records_steps_are_the_measured_rows_of_their_formats():
    table = view.render_formats(prediction(), 0.7, None, TUNED)["formats_table"].set_index("weights")
    assert table.loc["Q4_1 as published (head Q8_0)", "target step (ms)"] == 8.0
    assert table.loc["float16 (from Q4_1)", "target step (ms)"] == 16.0
    assert table.loc["Q4_1 as published (head Q8_0)", "step from"] == "measured here (tune)"
    assert table.loc["float32", "step from"].startswith("modelled")
    q4 = table.loc["Q4_1 as published (head Q8_0)"]  # its own v(K): 5 rows cost 2.5 steps, 9 rows 4.5
    assert q4["v at best K"] == pytest.approx(1 + 1.5 * q4["best K"] / 4, abs=1e-3)


def test_the_drafting_cost_comes_from_the_measurement_when_there_is_one():
    assert view.draft_token_s(prediction(), MEASURED_Q4) == (pytest.approx(0.25 * 0.008), "measured here")
    predicted, source = view.draft_token_s(prediction(), None)
    assert source == "predicted" and predicted == pytest.approx(prediction().at(3)[0] * prediction().decode.time_s)


def test_a_cheaper_target_moves_the_best_k_down_and_the_speedup_with_it_in_the_note():
    out = view.render_formats(prediction(), 0.7, MEASURED_Q4, TUNED)
    table = out["formats_table"].set_index("weights")
    heavy, light = table.loc["float32"], table.loc["Q4_1 as published (head Q8_0)"]
    assert light["c"] > heavy["c"] and light["best K"] <= heavy["best K"]
    assert light["speedup at best K"] < heavy["speedup at best K"]
    note = out["formats_note"]
    assert view.movement(*(next(p for p in view.lesson(prediction(), 0.7, MEASURED_Q4, TUNED).points
                              if p.format.key == key) for key in ("f32", "q4_1")), 0.7) in note
    assert f"{heavy['speedup at best K']:.2f}× to {light['speedup at best K']:.2f}×" in note and "measured here" in note
    assert "Steps measured here by <code>tune</code>: float16 (from Q4_1), Q4_1 as published (head Q8_0)" in note


def test_measured_speedups_land_on_the_format_the_run_ran_on():
    out = view.render_formats(prediction(), 0.7, MEASURED_Q4, TUNED)
    table = out["formats_table"].set_index("weights")
    assert table.loc["Q4_1 as published (head Q8_0)", "measured here"] == "K=1: 1.10×, K=2: 1.02×"
    assert table.loc["float32", "measured here"] == "–"
    [trace] = [t for t in out["formats_figure"].data if (t.name or "").startswith("measured here")]
    assert trace.name == "measured here on Q4_1 as published" and list(trace.x) == [1, 2]
    assert list(trace.error_y.array) == pytest.approx([0.05, 0.06]) and list(trace.error_y.arrayminus) == \
        pytest.approx([0.05, 0.05])


def test_a_measurement_on_weights_the_lesson_has_no_format_for_is_not_placed():
    elsewhere = Measured("t", "d", MEASURED_Q4.rows, 20, "bfloat16", step_s=0.008, weights="bfloat16")
    out = view.render_formats(prediction(), 0.7, elsewhere)
    assert not any((t.name or "").startswith("measured here") for t in out["formats_figure"].data)
    assert set(out["formats_table"]["measured here"]) == {"–"}


def test_the_figure_draws_one_curve_per_format_measured_steps_solid_modelled_dotted():
    fig = view.render_formats(prediction(), 0.7, None, TUNED)["formats_figure"]
    curves = [t for t in fig.data if t.mode == "lines"]
    assert len(curves) == len(wf.FORMATS)
    dashes = {t.legendgroup: t.line.dash for t in curves}
    assert dashes == {"f32": "dot", "f16": "solid", "q8_0": "dot", "q4_1": "solid"}
    stars = [t for t in fig.data if t.mode == "markers" and t.marker.symbol == "star"]
    assert len(stars) == len(wf.FORMATS)


def test_the_note_says_what_the_cheaper_target_did_in_words_that_match_the_figures():
    lesson = view.lesson(prediction(), 0.7, MEASURED_Q4, TUNED)
    by_key = {p.format.key: p for p in lesson.points}
    fewer = replace(by_key["q4_1"], best_k=by_key["f32"].best_k - 1, best_speedup=by_key["f32"].best_speedup * 0.9)
    assert view.movement(by_key["f32"], fewer, 0.7).endswith("speculation buys less on it.")
    assert f"moves from {by_key['f32'].best_k} to {by_key['f32'].best_k - 1}" in view.movement(by_key["f32"], fewer, 0.7)
    same = replace(by_key["f32"], step_s=by_key["f32"].step_s * 0.95)
    assert "stays at" in view.movement(by_key["f32"], same, 0.7) and "fixed overhead" in view.movement(by_key["f32"], same, 0.7)
