"""Leviathan et al.'s formulas, and alpha / c measured from events."""
import pytest

from specdec import theory
from ui_fakes import make_step, mixed_run


def test_expected_tokens_matches_the_paper_example():
    assert theory.expected_tokens_per_forward(0.8, 4) == pytest.approx(3.3616)


def test_speedup_matches_the_paper_example():
    assert theory.theoretical_speedup(0.8, 4, 0.05) == pytest.approx(2.8013, abs=1e-4)


def test_perfect_acceptance_gives_k_plus_one_tokens():
    assert theory.expected_tokens_per_forward(1.0, 4) == 5


def test_best_k_grows_with_acceptance_and_shrinks_with_cost():
    assert theory.best_k(0.9, 0.05) > theory.best_k(0.5, 0.05) > theory.best_k(0.5, 0.5) >= 1


def test_invalid_alpha_is_refused():
    with pytest.raises(ValueError):
        theory.expected_tokens_per_forward(1.5, 4)


def test_measured_alpha_ignores_unchecked_positions():
    assert theory.measured_alpha(mixed_run()) == pytest.approx(4 / 6)


def test_cost_ratio_is_median_draft_forward_over_median_target_forward():
    spec = [make_step(i, [(" a", True)] * 4, ("b", "bonus"), times=(0.004, 0.1, 0)) for i in range(3)]
    base = [make_step(i, [], ("b", "target"), times=(0, 0.010, 0)) for i in range(3)]
    assert theory.cost_ratio(spec, base) == pytest.approx(0.1)


def test_stats_from_events_count_one_target_forward_per_step():
    stats = theory.compute_stats(mixed_run())
    assert (stats.new_tokens, stats.target_forwards, stats.accepted, stats.drafted) == (7, 3, 4, 7)
    assert stats.tokens_per_forward == pytest.approx(7 / 3)


def test_measured_speedup_is_the_ratio_of_tokens_per_second():
    fast, slow = theory.RunStats(10, 5, 0, 0, 1.0), theory.RunStats(10, 10, 0, 0, 2.0)
    assert theory.measured_speedup(fast, slow) == 2.0 and theory.measured_speedup(fast, None) is None
