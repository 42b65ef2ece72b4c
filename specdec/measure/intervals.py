"""Distribution-free 95% intervals for a median, from order statistics: what turns the per-pair ratios of a speedup
measurement (speedup.py) into "1.42×, 95% interval 1.37–1.48". No assumption about the shape of the noise."""
from __future__ import annotations

import math
from typing import Optional

CONFIDENCE = 0.95


def _binomial_tail(n: int, j: int) -> float:
    """P(X <= j) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n


def median_interval_ranks(n: int, confidence: float = CONFIDENCE) -> Optional[tuple[int, int]]:
    """1-based ranks (lo, hi) of the order-statistic interval [x_(lo), x_(hi)] for the median of n
    values: the narrowest symmetric one whose coverage 1 - 2 P(X <= lo - 1) is at least `confidence`
    (X ~ Binomial(n, 1/2)); None when even [min, max] covers less (n < 6 at 95%)."""
    best = None
    for lo in range(1, n // 2 + 1):
        if 1 - 2 * _binomial_tail(n, lo - 1) >= confidence:
            best = (lo, n + 1 - lo)
        else:
            break
    return best


def median_interval(values, confidence: float = CONFIDENCE) -> Optional[tuple[float, float]]:
    """Distribution-free interval for the median (no assumption about the shape of the noise)."""
    values = sorted(values)
    ranks = median_interval_ranks(len(values), confidence)
    if ranks is None:
        return None
    return values[ranks[0] - 1], values[ranks[1] - 1]


def pairs_for_interval(confidence: float = CONFIDENCE) -> int:
    """The fewest pairs for which an interval exists at this confidence (6 at 95%)."""
    n = 1
    while median_interval_ranks(n, confidence) is None:
        n += 1
    return n
