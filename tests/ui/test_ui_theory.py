"""Leviathan et al.'s formulas, and alpha / c measured from events."""
from dataclasses import replace

from specdec.engine import theory

import pytest

from tests.ui_fakes import make_step, mixed_run


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


def test_tokens_by_position_with_equal_alphas_is_the_iid_formula():
    assert theory.expected_tokens_by_position([0.6] * 4) == pytest.approx(theory.expected_tokens_per_forward(0.6, 4))
    assert theory.expected_tokens_by_position([0.9, 0.0, 0.9]) == pytest.approx(1.9)


def test_measured_alpha_ignores_unchecked_positions():
    assert theory.measured_alpha(mixed_run()) == pytest.approx(4 / 6)


def test_acceptance_rate_counts_unchecked_tokens_as_drafted_unlike_alpha():
    assert theory.live_metrics(mixed_run()).acceptance_rate == pytest.approx(4 / 7)


def test_the_measured_form_divides_by_k_c_plus_v():
    assert theory.theoretical_speedup(0.8, 4, 0.05, v=1.5) == pytest.approx(3.3616 / 1.7)
    assert theory.theoretical_speedup(0.8, 4, 0.05, v=1.0) == theory.theoretical_speedup(0.8, 4, 0.05)


def test_v_is_a_speculative_steps_target_side_over_a_target_only_step():
    spec = [make_step(i, [(" a", True)] * 4, ("b", "bonus"), times=(0.004, 0.015, 0.005)) for i in range(3)]
    base = [make_step(i, [], ("b", "target"), times=(0, 0.008, 0.002)) for i in range(3)]
    assert theory.verify_cost_ratio(spec, base, 4) == pytest.approx(2.0)


def test_paired_cost_ratios_take_the_median_over_pairs_of_each_pairs_own_ratio():
    from specdec.measure.speedup import Pair, Timing
    pairs = [Pair(Timing(1, 1, theory.SpeculativeCosts(d, 3 * s, 4, 4, 4)), Timing(1, 1, theory.BaselineCosts(s)), True)
             for d, s in ((0.1, 1.0), (0.4, 2.0), (0.9, 3.0))]
    assert theory.paired_cost_ratios(pairs) == (pytest.approx(0.2), pytest.approx(3.0))


def test_a_robust_line_ignores_one_wild_point():
    assert theory.fit_line([1, 2, 3, 4, 5], [1.0, 1.1, 5.0, 1.3, 1.4]) == (pytest.approx(0.9), pytest.approx(0.1))


def test_the_draft_capacity_is_k_per_step_shrinking_near_max_new_tokens():
    steps = [make_step(i, [(" a", True)] * 4, ("b", "bonus")) for i in range(3)]  # 5 tokens a step
    assert theory.draft_capacity(steps, 4, max_new_tokens=12) == 4 + 4 + 1  # the last: 2 remaining, K=1


def test_relative_errors_skip_missing_points():
    assert theory.relative_errors([1.1, None, 0.9], [1.0, 1.0, 1.0]) == [pytest.approx(0.1), pytest.approx(-0.1)]


def test_cost_ratio_is_median_draft_forward_over_median_target_forward():
    spec = [make_step(i, [(" a", True)] * 4, ("b", "bonus"), times=(0.004, 0.1, 0)) for i in range(3)]
    base = [make_step(i, [], ("b", "target"), times=(0, 0.010, 0)) for i in range(3)]
    assert theory.cost_ratio(spec, base) == pytest.approx(0.1)


def test_stats_from_events_count_one_target_forward_per_step():
    stats = theory.live_metrics(mixed_run())
    assert (stats.new_tokens, stats.target_forwards, stats.accepted_tokens, stats.drafted_tokens) == (7, 3, 4, 7)
    assert stats.tokens_per_forward == pytest.approx(7 / 3)


def test_measured_speedup_is_the_ratio_of_tokens_per_second():
    fast, slow = replace(theory.live_metrics(mixed_run()), wall_time_s=1.0), replace(theory.live_metrics(mixed_run()), wall_time_s=2.0)
    assert theory.measured_speedup(fast, slow) == 2.0 and theory.measured_speedup(fast, None) is None
