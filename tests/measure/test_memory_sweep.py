"""Memory in the Sweep: each point carries its run's MemoryReport terms; the speedup-vs-extra-memory chart
marks the Pareto front; the table and CSV carry the memory columns; Generate's chart stacks the extra."""
from __future__ import annotations

from specdec.engine.events import PEAK_CPU, DecodeSettings, MemoryReport
from specdec.measure.speedup import Policy
from specdec.measure.sweep import SweepRunner, pareto_front, plan_sweep
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.sweep.callbacks import sweep
from specdec.ui.views import plots
from specdec.ui.views.memory_plots import pareto_figure
from specdec.ui.views.sweep import sweep_dataframe, sweep_update

import pandas as pd
import pytest

from tests.ui_fakes import MEMORY, FakeEngine, FakeModel, form_request

LAB_DRAFTS = ["prompt-lookup", "lab-draft-small", "lab-draft-tiny", "lab-draft-distilled"]
ONE_PAIR = Policy(min_repeats=1, floor_repeats=1, max_repeats=1, budget_s=0.0, hard_budget_s=0.0)


def fake_rows(ks=(1, 2, 3)):
    runner = SweepRunner(FakeEngine(), FakeModel("t"), {"d": FakeModel("d")}, [1, 2], DecodeSettings(max_new_tokens=16))
    return list(runner.rows(plan_sweep(["d"], list(ks), [0.0])))


def placed(rows, points):
    """Gives rows (extra bytes, speedup) pairs, in order."""
    for row, (extra, speedup) in zip(rows, points):
        row.extra_bytes, row.speedup = extra, speedup
    return rows


def test_a_point_carries_the_memory_of_its_speculative_run():
    row = fake_rows([4])[0]
    assert (row.draft_param_bytes, row.draft_kv_bytes, row.extra_bytes) == (
        MEMORY.draft_param_bytes, MEMORY.draft_kv_bytes, MEMORY.extra_bytes)


def test_the_pareto_front_keeps_the_points_no_other_beats_on_speed_and_memory():
    rows = placed(fake_rows([1, 2, 3, 4]), [(10, 1.2), (20, 1.1), (30, 1.5), (30, 1.4)])
    assert [(r.extra_bytes, r.speedup) for r in pareto_front(rows)] == [(10, 1.2), (30, 1.5)]


def test_the_pareto_front_is_drawn_per_temperature():
    rows = placed(fake_rows([1, 2]), [(10, 1.2), (20, 1.1)])
    rows[1].temperature = 1.0
    assert pareto_front(rows) == rows


def test_the_chart_has_a_point_per_draft_and_k_and_marks_the_front():
    rows = placed(fake_rows([1, 2, 3]), [(2**20, 1.2), (2 * 2**20, 1.1), (3 * 2**20, 1.5)])
    fig = pareto_figure(rows)
    points, front = fig.data[0], next(t for t in fig.data if t.name == "Pareto front")
    assert list(points.text) == ["K=1", "K=2", "K=3"] and list(points.x) == [1.0, 2.0, 3.0]
    assert list(front.x) == [1.0, 3.0] and "extra memory" in fig.layout.xaxis.title.text


def test_the_sweep_table_shows_extra_memory_and_a_coarse_cpu_peak():
    rows = fake_rows([1])
    rows[0].peak_delta_bytes, rows[0].peak_source = 3 * 2**20, PEAK_CPU
    table = sweep_dataframe(rows)
    assert table["extra"][0] == "8.5 MiB" and table["peak Δ"][0] == "3.0 MiB (coarse)"


def test_the_sweep_csv_carries_every_memory_column_with_its_source():
    rows = fake_rows([1])
    rows[0].peak_source = PEAK_CPU
    csv = pd.read_csv(sweep_update(rows)["sweep_export"])
    assert {"draft_param_bytes", "draft_kv_bytes", "target_kv_bytes", "verify_kv_bytes", "extra_bytes",
            "peak_delta_bytes", "baseline_peak_delta_bytes", "peak_source"} <= set(csv.columns)
    assert csv["peak_source"][0] == "cpu peak RSS (coarse)"


def test_generates_memory_chart_stacks_the_extra_from_its_three_parts():
    memory = MemoryReport("cpu", 40 * 2**20, 8 * 2**20, 2**20, 2**19, None, None, verify_kv_bytes=2**18,
                          peak_delta_bytes=2**20, peak_source=PEAK_CPU)
    fig = plots.memory_figure(memory)
    stacked = [t for t in fig.data if list(t.x) == ["extra memory"]]
    assert [t.name for t in stacked] == ["extra: draft weights", "extra: draft KV cache", "extra: verification slots"]
    assert sum(t.y[0] for t in stacked) * 2**20 == memory.extra_bytes
    assert "run peak Δ (RSS, coarse)" in list(fig.data[0].x) and "extra 8.8 MiB" in fig.layout.title.text


@pytest.fixture(scope="module")
def lab_sweep():
    """The Sweep tab's callback on the bundled lab family: every bundled drafter at K = 1, 4, 8."""
    session = Session()
    request = form_request(prompt="def parse(argv):", clean_whitespace=False, target="lab-target", target_custom="",
                           draft=LAB_DRAFTS[0], draft_custom="", k=4, temperature=0.0, top_p=1.0, top_k=0,
                           max_new_tokens=16, seed=0, chat=False)
    final = list(sweep(Lab(sweep_policy=ONE_PAIR), session, request, LAB_DRAFTS, "1, 4, 8", "0", 16))[-1]
    return final, session.sweep_rows


def test_a_sweep_over_the_bundled_drafters_shows_each_points_extra_memory_and_speedup(lab_sweep):
    final, rows = lab_sweep
    assert len(rows) == 12 and all(r.speedup is not None and r.extra_bytes is not None for r in rows)
    markers = [t for t in final["sweep_memory"].data if t.name in LAB_DRAFTS]
    assert sorted(t.name for t in markers) == sorted(LAB_DRAFTS) and all(len(t.x) == 3 for t in markers)


def test_in_a_real_sweep_extra_memory_grows_by_one_target_position_per_k(lab_sweep):
    _, rows = lab_sweep
    lookup = {r.k: r for r in rows if r.draft == "prompt-lookup"}
    per_position = lookup[1].verify_kv_bytes
    assert lookup[8].extra_bytes == 8 * per_position and lookup[4].extra_bytes == 4 * per_position
    model = {r.k: r for r in rows if r.draft == "lab-draft-small"}
    assert model[4].extra_bytes == model[4].draft_param_bytes + model[4].draft_kv_bytes + 4 * per_position
    assert model[8].draft_kv_bytes > model[1].draft_kv_bytes  # its cache is sized for K more positions
