"""Sweeps: parsing ranges, measured points (cached), both theory forms, the tab's callback."""
from specdec.engine.events import DecodeSettings
from specdec.measure.sweep import (
    SweepPoint,
    SweepRunner,
    add_theory,
    fit_errors,
    parse_ks,
    parse_temperatures,
    plan_sweep,
)
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.sweep.callbacks import sweep
from specdec.ui.tabs.sweep.layout import SWEEP_WIDTHS
from specdec.ui.views.sweep import (
    TABLE_COLUMNS,
    acceptance_figure,
    best_summary,
    heatmap_figure,
    speedup_figure,
    sweep_dataframe,
    theory_fit_html,
)

import pytest

from tests.ui_fakes import FakeEngine, FakeModel

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


def runner(engine, cache=None, **kwargs):
    return SweepRunner(engine, FakeModel("t"), {"d": FakeModel("d")}, [1, 2], DecodeSettings(max_new_tokens=16),
                       cache, **kwargs)


def rows_for(ks, temperatures=(0.0,)):
    return add_theory(list(runner(FakeEngine()).rows(plan_sweep(["d"], list(ks), list(temperatures)))))


def test_every_point_is_a_repeated_measurement_against_the_target_alone():
    engine = FakeEngine()
    row = runner(engine).measure(SweepPoint("d", 3, 0.0))
    assert row.repeats >= 3 and sum(g.draft is None for g in engine.generations) == row.repeats


def test_points_are_reused_from_the_session_cache():
    engine, cache = FakeEngine(), {}
    list(runner(engine, cache).rows(plan_sweep(["d"], [1], [0.0])))
    runs = len(engine.generations)
    list(runner(engine, cache).rows(plan_sweep(["d"], [1], [0.0])))
    assert len(engine.generations) == runs


def test_warm_up_runs_each_draft_and_the_target_briefly_without_caching_anything():
    engine, cache = FakeEngine(), {}
    runner(engine, cache).warm_up(tokens=4)
    assert [g.draft is None for g in engine.generations] == [True, False] and not cache
    assert all(g.settings.max_new_tokens == 4 for g in engine.generations)


def test_rows_carry_the_measured_speedup_its_interval_acceptance_c_and_v():
    row = runner(FakeEngine()).measure(SweepPoint("d", 4, 0.0))
    assert row.speedup > 1 and row.speedup_low <= row.speedup <= row.speedup_high and row.repeats >= 6
    assert 0 < row.acceptance_rate < row.alpha_point < 1
    assert row.c == pytest.approx(0.05) and row.v == pytest.approx(1.0)


def test_a_stop_before_a_points_first_repeat_ends_the_rows():
    stop = []
    sweep_runner = runner(FakeEngine(), should_stop=lambda: bool(stop))
    stop.append(True)
    assert list(sweep_runner.rows(plan_sweep(["d"], [1, 2], [0.0]))) == []


def test_theory_pools_alpha_per_draft_and_temperature_and_marks_the_best_k():
    rows = rows_for([1, 2, 3, 4])
    assert all(r.alpha == rows[0].alpha for r in rows) and sum(r.best_measured for r in rows) == 1
    assert all(r.theory_textbook and r.theory_measured and r.theory_best_k for r in rows)


def test_the_measured_form_divides_by_k_c_plus_the_measured_v():
    row = rows_for([4])[0]
    expected = (1 - row.alpha ** 5) / (1 - row.alpha) / (4 * row.c_pooled + row.v_fit)
    assert row.theory_measured == pytest.approx(expected)


def test_the_free_drafting_form_is_the_measured_form_with_c_zero():
    row = rows_for([4])[0]
    expected = (1 - row.alpha ** 5) / (1 - row.alpha) / row.v_fit
    assert row.theory_free_draft == pytest.approx(expected) and row.theory_free_draft > row.theory_measured


def test_no_free_drafting_form_is_drawn_where_no_theory_applies():
    rows = rows_for([1, 2])
    rows[1].proposal_share = 0.4
    add_theory(rows)
    assert rows[0].theory_free_draft is not None and rows[1].theory_free_draft is None


def test_v_is_fitted_as_a_line_over_the_groups_k_values():
    rows = rows_for([1, 2, 3, 4, 5])
    for r, v in zip(rows, (1.2, 1.4, 9.0, 1.8, 2.0)):  # K=3 disturbed by another process
        r.v = v
    add_theory(rows)
    assert [round(r.v_fit, 6) for r in rows] == [1.2, 1.4, 1.6, 1.8, 2.0]


def test_no_theory_is_drawn_where_the_drafter_proposed_far_fewer_than_k_tokens():
    rows = rows_for([1, 2])
    rows[1].proposal_share = 0.4  # e.g. prompt lookup, finding nothing to copy in most steps
    add_theory(rows)
    assert rows[0].theory_textbook is not None and rows[1].theory_textbook is None
    assert "no theory where it drafted under 90%" in best_summary(rows)


def test_fit_errors_report_both_forms_against_the_measured_points():
    fits = {f.form: f for f in fit_errors(rows_for([1, 2, 3]))}
    assert set(fits) == {"textbook", "measured"} and fits["measured"].points == 3


def test_speedup_figure_draws_measured_points_both_forms_and_stars_the_best_k():
    names = [t.name for t in speedup_figure(rows_for([1, 2, 3])).data]
    assert any("measured" in n for n in names) and any("textbook v=1" in n for n in names)
    assert any("measured form v(K)" in n for n in names) and any("best K=" in n for n in names)


def test_the_speedup_figure_keeps_the_free_drafting_form_hidden_until_asked_for():
    free = [t for t in speedup_figure(rows_for([1, 2, 3])).data if "drafting free" in t.name]
    assert len(free) == 1 and free[0].visible == "legendonly" and len(free[0].y) == 3


def test_measured_points_carry_their_interval_as_error_bars():
    measured = speedup_figure(rows_for([1, 2])).data[0]
    assert measured.error_y.array is not None and len(measured.error_y.array) == 2


def test_the_k_axes_show_integers_only():
    rows = rows_for([1, 2, 3])
    for fig in (speedup_figure(rows), acceptance_figure(rows)):
        assert list(fig.layout.xaxis.tickvals) == [1, 2, 3]


def test_the_acceptance_figure_labels_acceptance_rate_and_alpha():
    names = [t.name for t in acceptance_figure(rows_for([1, 2])).data]
    assert any("acceptance rate" in n for n in names) and any(n.endswith("α") for n in names)


def test_heatmap_has_k_columns_and_temperature_rows():
    heat = heatmap_figure(rows_for([1, 2, 3], [0.0, 1.0])).data[0]
    assert list(heat.x) == ["1", "2", "3"] and list(heat.y) == ["T=0", "T=1"]


def test_the_table_has_short_headers_and_the_interval():
    df = sweep_dataframe(rows_for([1, 2]))
    assert list(df.columns)[:5] == ["draft", "schedule", "T", "K", "acc. rate"] and "95% interval" in df.columns
    assert all("–" in v for v in df["95% interval"])


def test_every_column_of_the_table_has_a_width():
    assert len(SWEEP_WIDTHS) == len(TABLE_COLUMNS)


def test_sweep_tab_ends_with_table_plots_export_best_k_and_theory_fit():
    session = Session()
    updates = list(sweep(Lab(FakeEngine()), session, **SWEEP))
    final = updates[-1]
    assert len(final["sweep_table"]) == 8 and final["sweep_export"].endswith(".csv")
    assert "best measured K=" in final["sweep_best"] and "key-result" in final["sweep_best"]
    assert "textbook form" in final["sweep_best"] and "measured form" in final["theory_fit"]
    assert len(session.sweep_rows) == 8 and "Sweep finished: 8 of 8 points measured." in final["status"]


def test_how_it_works_lists_the_free_drafting_form_beside_both_forms():
    rows = rows_for([1, 2])
    html = theory_fit_html(rows)
    assert "drafting free (c = 0)" in html and f"{rows[1].theory_free_draft:.2f}" in html


def test_the_status_line_names_the_same_step_as_the_progress_bar():
    descriptions = []
    updates = list(sweep(Lab(FakeEngine()), Session(), **SWEEP,
                         progress=lambda *args, desc=None, **kwargs: descriptions.append(desc)))
    statuses = [u["status"] for u in updates if "status" in u][:-1]
    statuses = statuses[next(i for i, s in enumerate(statuses) if "Warming up" in s):]  # after loading
    assert len(statuses) == len(descriptions) and all(d in s for d, s in zip(descriptions, statuses))
    assert descriptions[0].startswith("Warming up") and descriptions[1].startswith("Measuring point 1 of 8")


def test_a_stopped_sweep_says_how_many_points_it_measured():
    lab, session = Lab(FakeEngine()), Session()
    stream = sweep(lab, session, **SWEEP, progress=lambda *a, **k: None)
    for update in stream:
        if "Measuring point 3 of 8" in update.get("status", ""):
            lab.stop(session)
    final = update
    assert "Sweep stopped: 2 of 8 points measured." in final["status"] and len(final["sweep_table"]) == 2


def test_sweep_with_bad_k_values_shows_an_error():
    updates = list(sweep(Lab(FakeEngine()), Session(), **{**SWEEP, "ks": "0-40"}))
    assert "K values must lie in [1, 16]" in updates[-1]["error"]
