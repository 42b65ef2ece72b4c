"""How many tokens to draft each step (K), chosen before the step from what earlier steps showed.

Any rule that fixes K before the step's own random draws keeps the output exact: each emitted
token is still drawn from the target's distribution given the tokens before it.

  constant    K every step
  heuristic   transformers' "heuristic" schedule: +2 after an all-accepted step, -1 otherwise, in 1..K
  confidence  K, but the drafter stops early once its top probability falls below CONFIDENCE_THRESHOLD
              (transformers' assistant_confidence_threshold)
  optimal     the K in 1..K that maximises expected tokens per second under the speedup formula,
              from running estimates of alpha (accepted / evaluated) and of the measured draft and
              verification times of this run
"""
from __future__ import annotations

import statistics
from typing import Optional

from .theory import expected_tokens_per_forward

SCHEDULES = ("constant", "heuristic", "confidence", "optimal")
CONFIDENCE_THRESHOLD = 0.4  # transformers' default assistant_confidence_threshold
ALPHA_PRIOR = (7.0, 3.0)  # optimal: Beta prior on alpha (accepted, rejected pseudo-counts) before evidence


class KSchedule:
    name = "constant"
    stop_below: Optional[float] = None  # passed to the drafter (confidence schedule only)

    def __init__(self, k_max: int):
        self.k_max = k_max

    def next_k(self) -> int:
        return self.k_max

    def update(self, drafted: int, evaluated: int, accepted: int, draft_time_s: float, verify_time_s: float) -> None:
        pass


class HeuristicSchedule(KSchedule):
    name = "heuristic"

    def __init__(self, k_max: int):
        super().__init__(k_max)
        self.k = k_max

    def next_k(self) -> int:
        return self.k

    def update(self, drafted, evaluated, accepted, draft_time_s, verify_time_s) -> None:
        if drafted == 0:
            return
        self.k = min(self.k_max, self.k + 2) if accepted == drafted else max(1, self.k - 1)


class ConfidenceSchedule(KSchedule):
    name = "confidence"
    stop_below = CONFIDENCE_THRESHOLD


class OptimalSchedule(KSchedule):
    """argmax_k E(alpha, k) / (k * t_draft + t_verify(k)), all measured in this run so far."""

    name = "optimal"

    def __init__(self, k_max: int):
        super().__init__(k_max)
        self.accepted, self.rejected = ALPHA_PRIOR
        self.draft_times: list[float] = []  # seconds per drafted token, per step
        self.verify_times: dict[int, list[float]] = {}  # drafted count -> verification seconds

    @property
    def alpha(self) -> float:
        return self.accepted / (self.accepted + self.rejected)

    def next_k(self) -> int:
        if not self.draft_times or not self.verify_times:
            return self.k_max  # first step: measure at the largest K
        t_draft = statistics.median(self.draft_times[-32:])
        alpha = min(self.alpha, 0.999)
        return max(range(1, self.k_max + 1),
                   key=lambda k: expected_tokens_per_forward(alpha, k) / (k * t_draft + self.verify_time(k)))

    def verify_time(self, k: int) -> float:
        """Mean verification time at the nearest drafted count measured (ties: the larger)."""
        nearest = min(self.verify_times, key=lambda n: (abs(n - k), -n))
        times = self.verify_times[nearest][-16:]
        return sum(times) / len(times)

    def update(self, drafted, evaluated, accepted, draft_time_s, verify_time_s) -> None:
        if drafted == 0:
            return
        self.accepted += accepted
        self.rejected += evaluated - accepted
        self.draft_times.append(draft_time_s / drafted)
        self.verify_times.setdefault(drafted, []).append(verify_time_s)


_CLASSES = {cls.name: cls for cls in (KSchedule, HeuristicSchedule, ConfidenceSchedule, OptimalSchedule)}


def make_schedule(name: str, k_max: int) -> KSchedule:
    return _CLASSES[name](k_max)
