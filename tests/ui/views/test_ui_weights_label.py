"""Which weights ran, said by every view and export of a run, from the run's own MemoryReport (target_weights:
LoadedModel.weights_label), never from a widget: the memory card, the memory figure, the report's settings and the
Sweep's CSV."""
from dataclasses import replace

import pandas as pd

from specdec.engine.events import DecodeSettings
from specdec.measure.sweep import SweepRunner, plan_sweep
from specdec.serving.run_record import RunRecord
from specdec.ui.views import plots
from specdec.ui.views.cards import render_cards
from specdec.ui.views.report import settings_html
from specdec.ui.views.sweep import sweep_update

from tests import ui_fakes
from tests.ui_fakes import FakeEngine, FakeModel, form_request

Q4 = replace(ui_fakes.MEMORY, target_weights="Q4_1 as published")


def run(monkeypatch, draft="d"):
    monkeypatch.setattr(ui_fakes, "MEMORY", Q4)
    return FakeEngine().generate(FakeModel("t"), FakeModel(draft), [1, 2], DecodeSettings(k=2, max_new_tokens=8))


def test_the_memory_card_names_the_targets_weights(monkeypatch):
    result = run(monkeypatch)
    html = render_cards(result.metrics, memory=result.metrics.memory)
    assert "(target: Q4_1 as published)" in html


def test_the_memory_figure_counts_the_weights_under_their_name():
    assert plots.memory_figure(Q4).data[0].y[0] == "target weights (Q4_1 as published)"  # horizontal bars: names on y
    assert plots.memory_figure(ui_fakes.MEMORY).data[0].y[0] == "target weights"  # a run that did not say


def test_the_reports_settings_name_the_weights_and_what_they_hold(monkeypatch):
    request = form_request(prompt="def f(x):", target="t", draft="d", k=2, max_new_tokens=8)
    html = settings_html(RunRecord(request, "def f(x):", run(monkeypatch)))
    assert "<td>target weights</td>" in html and "Q4_1 as published, 40.0 MiB held" in html


def test_the_run_json_export_carries_the_weights(monkeypatch):
    request = form_request(prompt="def f(x):", target="t", draft="d", k=2, max_new_tokens=8)
    exported = RunRecord(request, "def f(x):", run(monkeypatch)).to_dict()
    assert exported["metrics"]["memory"]["target_weights"] == "Q4_1 as published"


def test_the_sweep_csv_says_which_weights_each_point_ran_on(monkeypatch):
    monkeypatch.setattr(ui_fakes, "MEMORY", Q4)
    runner = SweepRunner(FakeEngine(), FakeModel("t"), {"d": FakeModel("d")}, [1, 2], DecodeSettings(max_new_tokens=16))
    rows = list(runner.rows(plan_sweep(["d"], [1], [0.0])))
    csv = pd.read_csv(sweep_update(rows)["sweep_export"])
    assert csv["target_weights"][0] == "Q4_1 as published" and csv["target_param_bytes"][0] == 40 * 2**20
