"""The Sweep compares K schedules: each adaptive schedule is measured per draft, K (its largest) and temperature
like constant K, drawn as its own line, tabled with a schedule column and summed up next to the best constant K."""
from specdec.engine.events import DecodeSettings
from specdec.measure.sweep import (
    ScheduleComparison,
    SweepPoint,
    SweepRunner,
    add_theory,
    compare_schedules,
    parse_schedules,
    plan_sweep,
)
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.sweep.callbacks import sweep
from specdec.ui.views.memory_plots import pareto_figure
from specdec.ui.views.sweep import best_summary, heatmap_figure, speedup_figure, sweep_dataframe, sweep_update

import pandas as pd
import pytest

from tests.ui_fakes import FakeEngine, FakeModel, form_request

TWO = ("constant", "heuristic")
FORM = dict(prompt="def f(x):", clean_whitespace=False, target="lab-target", max_new_tokens=16)
SWEEP = dict(drafts=["lab-draft"], ks="1-2", temperatures="0", tokens=16)


def runner(engine=None, cache=None):
    return SweepRunner(engine or FakeEngine(), FakeModel("t"), {"d": FakeModel("d")}, [1, 2],
                       DecodeSettings(max_new_tokens=16), cache)


def rows_for(ks=(1, 2), schedules=TWO):
    return add_theory(list(runner().rows(plan_sweep(["d"], list(ks), [0.0], schedules))))


def with_speedups(rows, figures: dict):
    """figures: (schedule, K) -> (speedup, low, high); then best K is marked again."""
    for r in rows:
        r.speedup, r.speedup_low, r.speedup_high = figures[(r.schedule, r.k)]
    return add_theory(rows)


def test_the_plan_has_every_schedule_for_every_draft_k_and_temperature():
    points = plan_sweep(["a"], [1, 2], [0.0, 1.0], TWO)
    assert len(points) == 8 and points[:3] == [SweepPoint("a", 1, 0.0, "constant"), SweepPoint("a", 2, 0.0),
                                               SweepPoint("a", 1, 0.0, "heuristic")]


def test_schedules_are_read_in_their_canonical_order():
    assert parse_schedules(["optimal", "constant"]) == ["constant", "optimal"]


@pytest.mark.parametrize("names, message", [(["fastest"], "Unknown K schedule 'fastest'"),
                                            ([], "Pick at least one K schedule")])
def test_unknown_or_no_schedules_are_refused(names, message):
    with pytest.raises(ValueError, match=message):
        parse_schedules(names)


def test_an_adaptive_point_runs_its_schedule_with_the_points_k_as_the_largest():
    engine = FakeEngine()
    runner(engine).measure(SweepPoint("d", 4, 0.0, "heuristic"))
    speculative = [g.settings for g in engine.generations if g.draft is not None]
    assert speculative and all((s.k_schedule, s.k) == ("heuristic", 4) for s in speculative)


def test_each_schedule_at_the_same_k_is_its_own_paired_measurement():
    cache = {}
    rows = list(runner(cache=cache).rows(plan_sweep(["d"], [2], [0.0], TWO)))
    assert len(cache) == 2 and all(r.repeats >= 6 for r in rows)
    assert {key[-1].k_schedule for key in cache} == set(TWO)


def test_best_k_is_marked_per_draft_schedule_and_temperature():
    rows = rows_for([1, 2, 3])
    assert sum(r.best_measured for r in rows if r.schedule == "constant") == 1
    assert sum(r.best_measured for r in rows if r.schedule == "heuristic") == 1


def test_no_theory_is_drawn_for_an_adaptive_schedule():
    rows = rows_for()
    assert all(r.theory_textbook is None for r in rows if r.schedule == "heuristic")
    assert all(r.theory_textbook is not None for r in rows if r.schedule == "constant")


def test_overlapping_intervals_mean_no_measurable_difference():
    rows = with_speedups(rows_for(), {("constant", 1): (1.1, 1.0, 1.2), ("constant", 2): (1.3, 1.2, 1.4),
                                      ("heuristic", 1): (1.0, 0.9, 1.1), ("heuristic", 2): (1.35, 1.25, 1.45)})
    [cmp] = compare_schedules(rows)
    assert (cmp.schedule, cmp.best.k, cmp.constant.k, cmp.verdict) == ("heuristic", 2, 2, "no measurable difference")


@pytest.mark.parametrize("heuristic, verdict", [((1.6, 1.5, 1.7), "faster"), ((1.0, 0.9, 1.1), "slower")])
def test_disjoint_intervals_say_which_is_faster(heuristic, verdict):
    rows = with_speedups(rows_for([1]), {("constant", 1): (1.3, 1.2, 1.4), ("heuristic", 1): heuristic})
    assert compare_schedules(rows)[0].verdict == verdict


def test_without_both_intervals_there_is_no_verdict():
    rows = with_speedups(rows_for([1]), {("constant", 1): (1.3, None, None), ("heuristic", 1): (1.6, 1.5, 1.7)})
    assert compare_schedules(rows)[0].verdict is None


def test_a_sweep_without_constant_k_has_nothing_to_compare_with():
    [cmp] = compare_schedules(rows_for(schedules=("optimal",)))
    assert cmp == ScheduleComparison("optimal", cmp.best, None) and cmp.verdict is None


def test_the_summary_puts_each_schedules_best_next_to_the_best_constant_k_with_intervals():
    rows = with_speedups(rows_for(), {("constant", 1): (1.1, 1.0, 1.2), ("constant", 2): (1.3, 1.2, 1.4),
                                      ("heuristic", 1): (1.0, 0.9, 1.1), ("heuristic", 2): (1.35, 1.25, 1.45)})
    text = best_summary(rows)
    assert "best measured K=2 (1.30×, interval 1.20–1.40)" in text
    assert ("heuristic schedule: best largest K=2 (1.35×, interval 1.25–1.45) vs best constant K=2 (1.30×, "
            "interval 1.20–1.40): no measurable difference") in text


def test_the_speedup_chart_has_one_measured_line_per_draft_and_schedule():
    names = [t.name for t in speedup_figure(rows_for()).data if t.name.endswith(" measured")]
    assert names == ["constant, T=0 measured", "heuristic, T=0 measured"]


def test_the_heatmap_has_a_panel_per_schedule():
    titles = [a.text for a in heatmap_figure(rows_for()).layout.annotations]
    assert titles == ["d · constant", "d · heuristic"]


def test_the_table_and_csv_carry_the_schedule():
    rows = rows_for()
    assert list(sweep_dataframe(rows)["schedule"]) == ["constant", "constant", "heuristic", "heuristic"]
    assert list(pd.read_csv(sweep_update(rows)["sweep_export"])["schedule"]) == list(sweep_dataframe(rows)["schedule"])


def test_the_memory_chart_has_a_point_per_draft_schedule_and_k():
    markers = [t for t in pareto_figure(rows_for()).data if t.mode == "markers+text"]
    assert [(t.name, list(t.text)) for t in markers] == [("d, constant", ["K=1", "K=2"]),
                                                         ("d, heuristic", ["K=1", "K=2"])]


def test_the_sweep_tab_measures_every_schedule_picked_and_names_it_while_measuring():
    session = Session()
    updates = list(sweep(Lab(FakeEngine()), session, form_request(**FORM), **SWEEP, schedules=["heuristic", "constant"]))
    assert [(r.schedule, r.k) for r in session.sweep_rows] == [("constant", 1), ("constant", 2), ("heuristic", 1),
                                                               ("heuristic", 2)]
    assert any("lab-draft, heuristic, K=1" in u.get("status", "") for u in updates)
    assert "heuristic schedule: best largest K=" in updates[-1]["sweep_best"]


def test_without_the_schedules_input_the_sweep_uses_the_sidebars_schedule():
    session = Session()
    list(sweep(Lab(FakeEngine()), session, form_request(**FORM, k_schedule="confidence"), **SWEEP))
    assert {r.schedule for r in session.sweep_rows} == {"confidence"}


def test_a_sweep_with_no_schedule_picked_shows_an_error():
    updates = list(sweep(Lab(FakeEngine()), Session(), form_request(**FORM), **SWEEP, schedules=[]))
    assert "Pick at least one K schedule" in updates[-1]["error"]


def test_the_chain_theory_is_not_drawn_for_tree_drafts():
    rows = rows_for(ks=(1, 2), schedules=("constant",))
    assert all(r.theory_textbook is not None for r in rows)
    for r in rows:
        r.tree = True
    assert all(r.theory_textbook is None and r.theory_measured is None for r in add_theory(rows))
