"""The Sweep and How it works call a drafter measured slower than target-only at every K "slower here"."""
from dataclasses import replace

from specdec.ui.views.sweep import SLOWER_HERE, best_summary, slower_here, theory_fit_html

from tests.ui.tabs.sweep.test_ui_sweep import rows_for


def with_speedups(rows, intervals):
    return [replace(r, speedup=(lo + hi) / 2, speedup_low=lo, speedup_high=hi) for r, (lo, hi) in zip(rows, intervals)]


def test_a_drafter_slower_at_every_k_is_slower_here():
    rows = with_speedups(rows_for([1, 2]), [(0.6, 0.8), (0.7, 0.9)])
    assert slower_here(rows)
    assert SLOWER_HERE in best_summary(rows) and SLOWER_HERE in theory_fit_html(rows)


def test_one_k_without_a_measurable_difference_is_not_slower_here():
    rows = with_speedups(rows_for([1, 2]), [(0.6, 0.8), (0.9, 1.1)])
    assert not slower_here(rows)
    assert SLOWER_HERE not in best_summary(rows) and SLOWER_HERE not in theory_fit_html(rows)


def test_points_without_an_interval_are_not_called_slower():
    rows = [replace(r, speedup=0.7, speedup_low=None, speedup_high=None) for r in rows_for([1])]
    assert not slower_here(rows)
