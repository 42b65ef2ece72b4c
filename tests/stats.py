"""Chi-square goodness of fit without scipy: p = Q(df/2, x/2), the regularised upper gamma."""
from __future__ import annotations

import torch

MIN_EXPECTED = 5.0  # cells expected fewer times are pooled, as the chi-square approximation needs


def chi_square_p_value(observed: torch.Tensor, expected_probs: torch.Tensor) -> float:
    observed = observed.double().flatten()
    expected = expected_probs.double().flatten() * observed.sum()
    impossible = expected == 0  # callers check separately that such cells were never observed
    observed, expected = observed[~impossible], expected[~impossible]
    small = expected < MIN_EXPECTED
    if small.any():
        observed = torch.cat([observed[~small], observed[small].sum().reshape(1)])
        expected = torch.cat([expected[~small], expected[small].sum().reshape(1)])
    statistic = ((observed - expected) ** 2 / expected).sum()
    df = torch.tensor(float(observed.numel() - 1), dtype=torch.float64)
    return float(torch.special.gammaincc(df / 2, statistic / 2))
