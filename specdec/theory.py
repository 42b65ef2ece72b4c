"""Leviathan et al. 2023 (arXiv 2211.17192): what speculative decoding should give, in closed form.

alpha: probability that one drafted token is accepted (assumed i.i.d. per position)
k:     draft length (gamma in the paper)
c:     cost ratio, one draft forward time / one target forward time
"""
from __future__ import annotations

from dataclasses import dataclass


def _check(alpha: float, k: int) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")


def expected_tokens_per_forward(alpha: float, k: int) -> float:
    """E = (1 - alpha^(k+1)) / (1 - alpha): tokens emitted per target forward, bonus included."""
    _check(alpha, k)
    if alpha == 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def theoretical_speedup(alpha: float, k: int, c: float) -> float:
    """Wall-time speedup (1 - alpha^(k+1)) / ((1 - alpha)(k c + 1)) over target-only decoding."""
    if c < 0:
        raise ValueError(f"c must be >= 0, got {c}")
    return expected_tokens_per_forward(alpha, k) / (k * c + 1.0)


def best_k(alpha: float, c: float, k_max: int = 16) -> int:
    """The draft length in 1..k_max with the highest theoretical speedup (found numerically)."""
    return max(range(1, k_max + 1), key=lambda k: theoretical_speedup(alpha, k, c))


# --- measuring alpha and c from a run's events (plain StepEvent records, no tensors) ---------------

def _median(values: list[float]) -> float | None:
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def measured_alpha(events) -> float | None:
    """Accepted / evaluated drafted tokens: the maximum-likelihood alpha under the i.i.d. model.

    Unchecked positions after a rejection are left out (counting them would bias alpha down).
    """
    evaluated = [d for e in events for d in e.drafted if d.evaluated]
    if not evaluated:
        return None
    return sum(d.accepted for d in evaluated) / len(evaluated)


def draft_forward_s(events) -> float | None:
    """Median time of one draft forward (a step's draft time / its K), the prefill step left out."""
    return _median([e.draft_time_s / e.k for e in events[1:] if e.k > 0])


def target_forward_s(baseline_events) -> float | None:
    """Median time of one target-only decoding forward, from a baseline run (prefill left out)."""
    return _median([e.verify_time_s for e in baseline_events[1:]])


def cost_ratio(spec_events, baseline_events) -> float | None:
    """c = draft forward time / target forward time, both measured on this machine."""
    draft, target = draft_forward_s(spec_events), target_forward_s(baseline_events)
    if draft is None or not target:
        return None
    return draft / target


# --- what a run achieved, from its events ----------------------------------------------------------

@dataclass(frozen=True)
class RunStats:
    """The headline figures of a run, so far (from events) or final (from the engine's RunMetrics)."""

    new_tokens: int
    target_forwards: int
    drafted: int
    accepted: int
    engine_s: float  # engine time; consumer/UI time between steps is never included

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    @property
    def tokens_per_forward(self) -> float | None:
        return self.new_tokens / self.target_forwards if self.target_forwards else None

    @property
    def tokens_per_s(self) -> float | None:
        return self.new_tokens / self.engine_s if self.engine_s > 0 else None


def step_seconds(event) -> float:
    return event.draft_time_s + event.verify_time_s + event.other_time_s


def compute_stats(events) -> RunStats:
    """Live figures from the events so far: one step is one target forward (prefill not counted)."""
    return RunStats(
        new_tokens=sum(len(e.emitted_ids) for e in events),
        target_forwards=len(events),
        drafted=sum(len(e.drafted) for e in events),
        accepted=sum(e.num_accepted for e in events),
        engine_s=sum(step_seconds(e) for e in events),
    )


def result_stats(result) -> RunStats:
    """Final figures from a RunResult's metrics (engine time includes the prompt's prefill)."""
    m = result.metrics
    return RunStats(new_tokens=m.new_tokens, target_forwards=m.target_forwards, drafted=m.drafted_tokens,
                    accepted=m.accepted_tokens, engine_s=m.wall_time_s)


def measured_speedup(spec: RunStats, baseline: RunStats | None) -> float | None:
    """Speculative tokens/s over the measured target-only tokens/s (None until both exist)."""
    if baseline is None or not spec.tokens_per_s or not baseline.tokens_per_s:
        return None
    return spec.tokens_per_s / baseline.tokens_per_s
