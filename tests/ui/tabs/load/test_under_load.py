"""The "Under load" tab (specdec/ui/tabs/load/, views/load.py): its curves, crossover marks and words, labels, coloured
requests, table and exports drawn from a made-up measurement (made_up.py); the predictions beside them; the shipped
measurement's labels; a live run against scripted vLLM servers (tests/vllm_fakes.py)."""
from __future__ import annotations

import csv
import json
from dataclasses import replace

from specdec.measure import cost_model as cm
from specdec.measure.device_presets import PRESETS, THIS_MACHINE
from specdec.ui.session import Session
from specdec.ui.tabs.load import callbacks as load_tab
from specdec.ui.tabs.load.callbacks import predictions, run_live, shipped_record, show
from specdec.ui.views import load as view
from specdec.ui.vllm.engine import VllmChoice
from specdec.vllm.load_shipped import SHIPPED

import pytest
from tests.ui.tabs.load.made_up import record, run
from tests.vllm_fakes import FakeServers

LEAD, BASE = "http://127.0.0.1:8000", "http://127.0.0.1:8001"


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def _crossover_marks(fig):
    lines = [s for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]
    notes = [a.text for a in fig.layout.annotations if a.text and a.text.startswith("crossover")]
    return [line.x0 for line in lines], notes


# --- the curves --------------------------------------------------------------------------------------------------

def test_throughput_plots_each_engines_tokens_per_second_against_concurrency():
    made_up = run()
    fig = view.throughput_figure(made_up)
    for engine, name in (("speculative", "speculative"), ("baseline", "baseline (no speculation)")):
        rows = view.rows_of(made_up, engine)
        trace = _trace(fig, name)
        assert list(trace.x) == [1, 2, 4, 8, 16, 32]
        assert list(trace.y) == [r["output_tokens_per_s"] for r in rows]


def test_latency_plots_the_median_time_per_token_with_a_bar_up_to_the_95th_percentile():
    made_up = run()
    trace = _trace(view.latency_figure(made_up), "speculative")
    rows = view.rows_of(made_up, "speculative")
    assert list(trace.y) == [r["tpot_ms_p50"] for r in rows]
    assert list(trace.error_y.array) == pytest.approx([r["tpot_ms_p95"] - r["tpot_ms_p50"] for r in rows])
    assert set(trace.error_y.arrayminus) == {0}


@pytest.mark.parametrize("figure", [view.throughput_figure, view.latency_figure, view.speedup_figure])
def test_every_plot_marks_the_crossover_at_its_concurrency(figure):
    positions, notes = _crossover_marks(figure(run()))
    assert positions == [8] and notes == ["crossover: c = 8"]


@pytest.mark.parametrize("figure", [view.throughput_figure, view.latency_figure, view.speedup_figure])
def test_no_crossover_mark_where_every_interval_reaches_above_one(figure):
    positions, notes = _crossover_marks(figure(run("draft_model", 3, {c: (1.3, 1.1, 1.5) for c in
                                                                       (1, 2, 4, 8, 16, 32)})))
    assert positions == [] and notes == []


def test_the_speedup_plot_shows_each_measured_median_with_its_interval():
    made_up = run()
    trace = _trace(view.speedup_figure(made_up), "measured (95% interval)")
    assert list(trace.y) == [s["speedup"] for s in made_up["speedups"]]
    assert list(trace.error_y.array) == pytest.approx([s["high"] - s["speedup"] for s in made_up["speedups"]])
    assert list(trace.error_y.arrayminus) == pytest.approx([s["speedup"] - s["low"] for s in made_up["speedups"]])


def test_the_speedup_plot_draws_each_predicted_curve_over_the_measured_points():
    curve = {"crossover": 16, "points": [{"concurrency": c, "speedup": 2.0 / c ** 0.25} for c in (1, 4, 16, 64)]}
    fig = view.speedup_figure(run(), [("NVIDIA H100 SXM, bfloat16", curve)])
    predicted = _trace(fig, "predicted: NVIDIA H100 SXM, bfloat16")
    assert list(predicted.x) == [1, 4, 16, 64] and predicted.mode == "lines"


# --- in words and labels -------------------------------------------------------------------------------------------

def test_the_crossover_is_said_with_its_speedup_and_interval():
    assert view.crossover_text(run()) == ("ngram K=4 stops paying at 8 concurrent requests: the speedup there is "
                                          "0.90× (0.85–0.95), its whole interval at or below 1×.")


def test_no_crossover_is_said_with_the_highest_concurrency_measured():
    text = view.crossover_text(run("draft_model", 3, {c: (1.3, 1.1, 1.5) for c in (1, 2, 4, 8, 16, 32)}))
    assert text.startswith("draft_model K=3: no crossover up to 32 concurrent requests")


def test_the_summary_gives_every_concurrencys_speedup_and_the_predicted_crossovers():
    html = view.summary_html(run(), [("NVIDIA T4, float16", {"crossover": 4, "points": [{"concurrency": 256}]})])
    assert 'id="load-crossover"' in html and "32: 0.70× (0.66–0.74)" in html
    assert "NVIDIA T4, float16: c = 4" in html and "identical to the baseline" in html


def test_the_summary_says_when_greedy_texts_differ():
    assert "differ from the baseline" in view.summary_html(run(same_text=False))


def test_a_shipped_measurement_is_labelled_with_its_machine_commands_date_and_notebook_entry():
    measurement = record()["measurement"]
    html = view.source_html(measurement, live=False)
    assert "Shipped measurement" in html and "Made-up CPU, 2 cores" in html and "2026-12-07T17:00:00Z" in html
    assert "docs/notebook/made-up.md" in html and html.count("python -m specdec load") == 2


def test_a_live_run_is_labelled_as_live_with_its_servers():
    html = view.source_html(record()["measurement"], live=True)
    assert "Measured live" in html and LEAD in html and BASE in html and "Shipped" not in html


@pytest.mark.skipif(not SHIPPED.exists(), reason="no shipped load measurement in this checkout")
def test_the_shipped_measurement_shows_its_own_machine_commands_and_date():
    shipped = shipped_record()
    assert shipped is not None and shipped["live"] is False
    html = show(Session(), shipped, 0, [], None)["load_source"]
    measurement = shipped["measurement"]
    assert measurement["machine"] in html and measurement["date"] in html and measurement["notebook"] in html
    assert all(command.split(" --")[0] in html for command in measurement["commands"])


def test_without_any_measurement_the_view_says_so():
    assert "No load measurement to show" in show(Session(), None, 0, [], None)["load_source"]


# --- the batch's tokens, the table, the exports ----------------------------------------------------------------

def test_the_sampled_requests_are_coloured_with_the_apps_fate_classes():
    html = view.fates_html(run(), 8)
    assert html.count('class="load-request"') == 2
    for fate in ("accepted", "resampled", "bonus"):
        assert f"tok-{fate}" in html
    assert "tok-legend" in html


def test_a_concurrency_without_samples_says_so():
    assert "No sampled requests" in view.fates_html(run(), 3)


def test_the_table_has_a_row_per_concurrency_and_engine_and_the_speedup_on_the_speculative_row():
    df = view.table(run())
    assert list(df.columns) == view.TABLE_COLUMNS and len(df) == 12
    assert df.iloc[0]["engine"] == "speculative" and df.iloc[0]["speedup (95% interval)"] == "1.30× (1.20–1.40)"
    assert df.iloc[1]["speedup (95% interval)"] == ""


def test_the_exports_hold_every_row_as_csv_and_the_record_as_json(tmp_path):
    shown = record()
    csv_path, json_path = view.export_files(shown["measurement"], str(tmp_path))
    lines = list(csv.DictReader(open(csv_path)))
    assert len(lines) == 24 and {line["method"] for line in lines} == {"ngram", "draft_model"}
    assert json.loads(open(json_path).read()) == json.loads(json.dumps(shown["measurement"]))


# --- what the view reads -------------------------------------------------------------------------------------------

def test_the_view_draws_only_from_the_record_the_widgets_pick_its_run():
    shown = record()
    first = show(Session(), shown, 0, [], None)
    second = show(Session(), shown, 1, [], None)
    assert "ngram K=4" in first["load_summary"] and "draft_model K=3" in second["load_summary"]
    shown["measurement"]["runs"][0]["rows"][0]["output_tokens_per_s"] = 12345.0
    again = show(Session(), shown, 0, [], None)
    assert 12345.0 in list(_trace(again["load_throughput"], "speculative").y)


def test_the_view_remembers_the_run_it_drew_for_the_tour():
    session = Session()
    show(session, record(), 1, [], None)
    assert session.load_shown["speculative"]["method"] == "draft_model"


def test_the_coloured_requests_default_to_the_highest_sampled_concurrency():
    out = show(Session(), record(), 0, [], None)
    assert out["load_fate_c"]["value"] == 32 and out["load_fate_c"]["choices"] == [1, 2, 4, 8, 16, 32]


def _small_network(monkeypatch):
    monkeypatch.setattr(cm, "target_network", lambda name: cm.Network(
        name, layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64, intermediate=1536, head_rows=49152))
    monkeypatch.setattr(cm, "draft_shape", lambda name, target: cm.DraftShape(name, "draft", None))


def test_this_machines_prediction_starts_at_the_measured_baseline_step(monkeypatch):
    _small_network(monkeypatch)
    made_up = run()
    curves, notes = predictions(made_up, [THIS_MACHINE], machine=lambda: PRESETS["t4"])
    first = curves[0][1]["points"][0]
    assert notes == [] and first["target_step_ms"] == pytest.approx(view.rows_of(made_up, "baseline")[0]["tpot_ms_p50"])


def test_a_gpu_preset_is_predicted_in_half_precision_up_to_256_requests(monkeypatch):
    _small_network(monkeypatch)
    (label, curve), = predictions(run(), ["h100"])[0]
    assert label == "NVIDIA H100 SXM, bfloat16" and curve["points"][-1]["concurrency"] == 256


def test_a_device_that_cannot_be_priced_is_a_note(monkeypatch):
    curves, notes = predictions(run(), ["no-such-gpu"])
    assert curves == [] and notes and "no-such-gpu" in notes[0]


# --- a live run ----------------------------------------------------------------------------------------------------

def _live(session, monkeypatch, concurrency="1,2", public=False):
    monkeypatch.setattr(load_tab, "is_public", lambda: public)
    return list(run_live(session, concurrency, 9, 2))


def test_a_live_run_yields_a_live_record_per_concurrency_with_its_command(monkeypatch):
    FakeServers(p8000=4, p8001=0).patch(monkeypatch)
    settings = load_tab.live_settings
    monkeypatch.setattr(load_tab, "live_settings", lambda *args: replace(settings(*args), settle_s=0.0))
    session = Session(vllm=VllmChoice(LEAD, BASE))
    updates = [u for u in _live(session, monkeypatch) if "load_record" in u]
    assert len(updates) == 2
    shown = updates[-1]["load_record"]
    assert shown["live"] is True
    (made,) = shown["measurement"]["runs"]
    assert sorted({r["concurrency"] for r in made["rows"]}) == [1, 2]
    assert made["command"].startswith(f"python -m specdec load --vllm-url {LEAD} --vllm-baseline-url {BASE}")
    assert "Measured live" in show(Session(), shown, 0, [], None)["load_source"]


def test_a_live_run_is_refused_on_a_public_deployment(monkeypatch):
    (update,) = _live(Session(vllm=VllmChoice(LEAD, BASE)), monkeypatch, public=True)
    assert "public deployment" in update["error"]


def test_a_live_run_needs_both_servers(monkeypatch):
    (update,) = _live(Session(vllm=VllmChoice(LEAD)), monkeypatch)
    assert "both URLs" in update["error"]


def test_a_live_run_refuses_servers_on_another_machine(monkeypatch):
    (update,) = _live(Session(vllm=VllmChoice("http://10.0.0.5:8000", BASE)), monkeypatch)
    assert "not on this machine" in update["error"]


def test_a_bad_concurrency_list_is_one_message(monkeypatch):
    (update,) = _live(Session(vllm=VllmChoice(LEAD, BASE)), monkeypatch, concurrency="1,x")
    assert "--concurrency" in update["error"] or "concurrency" in update["error"]


# --- the tour's exercise -------------------------------------------------------------------------------------------

def test_the_tours_load_exercise_opens_the_under_load_tab():
    from specdec.ui.tabs.tour.callbacks import load_exercise
    from specdec.ui.tour_state import TourState

    assert load_exercise(Session(), TourState(), "load")["tabs"]["selected"] == "load"


def test_the_load_exercises_answer_quotes_the_crossover_of_the_run_the_learner_looked_at():
    from specdec.ui.exercises import find_exercise
    from specdec.ui.tabs.tour.callbacks import compose_answer
    from specdec.ui.tour_state import TourState

    session = Session()
    show(session, record(), 0, [], None)
    answer = compose_answer(find_exercise("load"), session, TourState())
    assert "ngram K=4 stops paying at 8 concurrent requests" in answer and "**Why.**" in answer


def test_the_load_exercises_answer_asks_to_open_the_tab_first():
    from specdec.ui.exercises import find_exercise
    from specdec.ui.tabs.tour.callbacks import compose_answer
    from specdec.ui.tour_state import TourState

    assert "Open the Under load tab" in compose_answer(find_exercise("load"), Session(), TourState())
