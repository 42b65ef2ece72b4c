"""Sweeps: parsing ranges, running points against cached baselines, theory overlay, the tab's callback."""
import pytest

from specdec.events import DecodeSettings
from specdec.sweep import (SweepPoint, SweepRunner, add_theory, parse_ks, parse_temperatures, plan_sweep)
from specdec.ui.callbacks import Lab
from specdec.ui.session import Session
from specdec.ui.sweep_view import heatmap_figure, speedup_figure, sweep
from ui_fakes import FakeEngine, FakeModel

SWEEP = dict(prompt="def f(x):", clean_whitespace=False, target="lab-target", target_custom="",
             drafts=["lab-draft"], ks="1-4", temperatures="0, 0.7", max_new_tokens=16, seed=0, top_p=1.0, top_k=0)


def test_k_ranges_and_lists_are_parsed_sorted_and_distinct():
    assert parse_ks("1-3, 8 2") == [1, 2, 3, 8]


@pytest.mark.parametrize("text", ["0", "17", "", "a"])
def test_k_values_outside_1_to_16_or_unreadable_are_refused(text):
    with pytest.raises(ValueError):
        parse_ks(text)


def test_temperatures_are_parsed_within_0_to_2():
    assert parse_temperatures("1, 0, 0.7") == [0.0, 0.7, 1.0]
    with pytest.raises(ValueError):
        parse_temperatures("2.5")


def test_plan_covers_every_combination_temperature_first():
    points = plan_sweep(["a", "b"], [1, 2], [0.0, 1.0])
    assert len(points) == 8 and points[0] == SweepPoint("a", 1, 0.0) and points[-1] == SweepPoint("b", 2, 1.0)


def runner(engine, cache=None):
    return SweepRunner(engine.generate, FakeModel("t"), {"d": FakeModel("d")}, [1, 2],
                       DecodeSettings(max_new_tokens=16), cache)


def test_runner_measures_one_baseline_per_temperature():
    engine = FakeEngine()
    list(runner(engine).rows(plan_sweep(["d"], [1, 2, 3], [0.0, 0.7])))
    assert sum(g.draft is None for g in engine.generations) == 2


def test_runner_reuses_baselines_from_the_session_cache():
    engine, cache = FakeEngine(), {}
    list(runner(engine, cache).rows(plan_sweep(["d"], [1], [0.0])))
    list(runner(engine, cache).rows(plan_sweep(["d"], [2], [0.0])))
    assert sum(g.draft is None for g in engine.generations) == 1


def test_warm_up_runs_each_draft_and_the_target_briefly_without_caching_a_baseline():
    engine, cache = FakeEngine(), {}
    runner(engine, cache).warm_up(tokens=4)
    assert [g.draft is None for g in engine.generations] == [True, False] and not cache
    assert all(g.settings.max_new_tokens == 4 for g in engine.generations)


def test_rows_carry_measured_speedup_acceptance_and_cost_ratio():
    row = runner(FakeEngine()).measure(SweepPoint("d", 4, 0.0))
    assert row.speedup > 1 and 0 < row.acceptance_rate < 1 and row.c == pytest.approx(0.05)


def test_theory_pools_alpha_per_draft_and_temperature_and_marks_the_best_k():
    rows = add_theory(list(runner(FakeEngine()).rows(plan_sweep(["d"], [1, 2, 3, 4], [0.0]))))
    assert all(r.alpha == rows[0].alpha for r in rows) and sum(r.best_measured for r in rows) == 1
    assert all(r.theory_speedup and r.theory_best_k for r in rows)


def test_speedup_figure_overlays_theory_and_stars_the_best_k():
    rows = add_theory(list(runner(FakeEngine()).rows(plan_sweep(["d"], [1, 2, 3], [0.0]))))
    names = [t.name for t in speedup_figure(rows).data]
    assert any("measured" in n for n in names) and any("theory α=" in n for n in names)
    assert any("best K=" in n for n in names)


def test_heatmap_has_k_columns_and_temperature_rows():
    rows = add_theory(list(runner(FakeEngine()).rows(plan_sweep(["d"], [1, 2, 3], [0.0, 1.0]))))
    heat = heatmap_figure(rows).data[0]
    assert list(heat.x) == ["1", "2", "3"] and list(heat.y) == ["T=0", "T=1"]


def test_sweep_tab_streams_progress_and_ends_with_table_plots_export_and_best_k():
    session = Session()
    updates = list(sweep(Lab(FakeEngine()), session, **SWEEP))
    final = updates[-1]
    assert len(final["sweep_table"]) == 8 and final["sweep_export"].endswith(".csv")
    assert "best measured K=" in final["sweep_best"] and len(session.sweep_rows) == 8


def test_sweep_with_bad_k_values_shows_an_error():
    updates = list(sweep(Lab(FakeEngine()), Session(), **{**SWEEP, "ks": "0-40"}))
    assert "K values must lie in [1, 16]" in updates[-1]["error"]
