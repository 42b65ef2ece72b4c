"""Goodness of fit for the app's exactness check, without scipy.

chi_square_p_value: Pearson's chi-square of counts against exact probabilities; the p-value is the
regularised upper incomplete gamma Q(df / 2, statistic / 2) (torch.special.gammaincc, float64).
total_variation: half the L1 distance between the observed frequencies and the probabilities.
"""
from __future__ import annotations

import torch

MIN_EXPECTED = 5.0  # cells expected fewer times are pooled into one, as the chi-square approximation needs


def chi_square_p_value(observed: torch.Tensor, probs: torch.Tensor) -> float:
    """Counts [n] against probabilities [n] summing to 1. A count in a cell of probability 0 (an outcome
    that cannot happen) gives 0.0; cells expected fewer than MIN_EXPECTED times are pooled."""
    observed, probs = observed.double().flatten(), probs.double().flatten()
    if bool((observed[probs <= 0] > 0).any()):
        return 0.0
    observed, expected = observed[probs > 0], probs[probs > 0] * observed.sum()
    small = expected < MIN_EXPECTED
    if small.any():
        observed = torch.cat([observed[~small], observed[small].sum().reshape(1)])
        expected = torch.cat([expected[~small], expected[small].sum().reshape(1)])
    if observed.numel() < 2:
        return 1.0  # one cell: nothing can differ
    statistic = ((observed - expected) ** 2 / expected).sum()
    df = torch.tensor(float(observed.numel() - 1), dtype=torch.float64)
    return float(torch.special.gammaincc(df / 2, statistic / 2))


def total_variation(observed: torch.Tensor, probs: torch.Tensor) -> float:
    """max over events of |observed frequency - probability|, over these cells."""
    observed, probs = observed.double().flatten(), probs.double().flatten()
    total = observed.sum()
    if total == 0:
        return 0.0
    return float((observed / total - probs).abs().sum() / 2)
