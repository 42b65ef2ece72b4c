"""The chi-square helper used by the distribution tests behaves like the textbook test."""
import torch

from tests.stats import chi_square_p_value


def test_fair_counts_pass():
    assert chi_square_p_value(torch.tensor([2500.0, 2480, 2530, 2490]), torch.full((4,), 0.25)) > 0.5


def test_biased_counts_fail():
    assert chi_square_p_value(torch.tensor([2800.0, 2400, 2400, 2400]), torch.full((4,), 0.25)) < 1e-6


def test_impossible_cells_are_left_to_the_caller():
    p = chi_square_p_value(torch.tensor([500.0, 500, 0]), torch.tensor([0.5, 0.5, 0.0]))
    assert p == p and p > 0.5  # not NaN


def test_known_value_df1():
    # statistic 3.841 with one degree of freedom is the 5% critical value
    observed = torch.tensor([5000 + 98.0, 5000 - 98.0])
    assert abs(chi_square_p_value(observed, torch.tensor([0.5, 0.5])) - 0.0497) < 0.002
