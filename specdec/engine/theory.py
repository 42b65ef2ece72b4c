"""Leviathan et al. 2023 (arXiv 2211.17192): what speculative decoding should give, in closed form.

alpha: α = accepted / evaluated drafted tokens, the probability that one drafted token is accepted
       (assumed i.i.d. per position). Not the "acceptance rate" = accepted / drafted, which also
       counts the tokens discarded unchecked after a rejection.
k:     draft length (gamma in the paper)
c:     cost ratio, one draft forward / one target-only decoding step, both measured
v:     v(K), a speculative step's target work (verifying K + 1 tokens, the verification itself and
       the step's bookkeeping) / one target-only decoding step, measured; the textbook form takes v = 1

speedup = E / (K·c + v(K)) with E = (1 − α^(K+1)) / (1 − α) expected tokens per step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from specdec.engine.events import RunMetrics


def _check(alpha: float, k: int) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")


def expected_tokens_by_position(alphas) -> float:
    """E = 1 + a_1 + a_1·a_2 + … + a_1···a_K: tokens per target forward when the draft at position i is accepted with
    probability alphas[i - 1] given that every draft before it was (equal alphas: expected_tokens_per_forward)."""
    total, reach = 1.0, 1.0
    for alpha in alphas:
        reach *= alpha
        total += reach
    return total


def expected_tokens_per_forward(alpha: float, k: int) -> float:
    """E = (1 - alpha^(k+1)) / (1 - alpha): tokens emitted per target forward, bonus included."""
    _check(alpha, k)
    if alpha == 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def theoretical_speedup(alpha: float, k: int, c: float, v: float = 1.0) -> float:
    """Wall-time speedup E / (k c + v) over target-only decoding; v = 1 is the textbook form
    (1 - alpha^(k+1)) / ((1 - alpha)(k c + 1))."""
    if c < 0:
        raise ValueError(f"c must be >= 0, got {c}")
    if v <= 0:
        raise ValueError(f"v must be > 0, got {v}")
    return expected_tokens_per_forward(alpha, k) / (k * c + v)


def wilson_upper(rate: float, n: float, z: float) -> float:
    """The upper end of the Wilson score interval of a rate seen over n trials, z standard errors wide (sound for
    small n and for rates at 0, where the normal interval collapses)."""
    if n <= 0:
        return 1.0
    spread = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return min(1.0, (rate + z * z / (2 * n) + spread) / (1 + z * z / n))


def best_k(alpha: float, c: float, k_max: int = 16) -> int:
    """The draft length in 1..k_max with the highest theoretical speedup (found numerically)."""
    return max(range(1, k_max + 1), key=lambda k: theoretical_speedup(alpha, k, c))


# --- measuring alpha and c from a run's events (plain StepEvent records, no tensors) ---------------

def median(values) -> float | None:
    """The median (mean of the two middle values for an even count); None entries are skipped."""
    values = sorted(v for v in values if v is not None)
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
    """Median time of one draft forward (a step's draft time / its K); the first step is left out."""
    return median([e.draft_time_s / e.k for e in events[1:] if e.k > 0])


def target_forward_s(baseline_events) -> float | None:
    """Median time of one whole target-only decoding step (forward, sampling, bookkeeping), from a
    baseline run; the first step is left out."""
    return median([step_seconds(e) for e in baseline_events[1:]])


def verify_step_s(events, k: int) -> float | None:
    """Median time of a speculative step's target side (verifying k + 1 tokens, the verification and
    the step's bookkeeping: everything but drafting), over steps that drafted exactly k tokens."""
    return median([e.verify_time_s + e.other_time_s for e in events[1:] if e.k == k])


def cost_ratio(spec_events, baseline_events) -> float | None:
    """c = draft forward time / target-only step time, both measured on this machine."""
    draft, target = draft_forward_s(spec_events), target_forward_s(baseline_events)
    if draft is None or not target:
        return None
    return draft / target


def verify_cost_ratio(spec_events, baseline_events, k: int) -> float | None:
    """v(k) = a speculative step's target side at K = k / a target-only step (1 in the textbook)."""
    verify, target = verify_step_s(spec_events, k), target_forward_s(baseline_events)
    if verify is None or not target:
        return None
    return verify / target


# --- per-run step costs, kept with each timed pair of a measurement (plain floats) ----------------------

@dataclass(frozen=True)
class SpeculativeCosts:
    draft_s: float | None  # median seconds per draft forward
    verify_s: float | None  # median seconds of a step's target side at the full K
    drafted: int
    evaluated: int
    accepted: int
    capacity: int = 0  # tokens the steps could have drafted: K each, less near max_new_tokens

    @property
    def proposal_share(self) -> float | None:
        """drafted / capacity: 1.0 for a draft model at a constant K; less for a drafter that often
        proposes fewer tokens (prompt lookup), where the i.i.d. theory at K does not describe the run."""
        return self.drafted / self.capacity if self.capacity else None


@dataclass(frozen=True)
class BaselineCosts:
    step_s: float | None  # median seconds per target-only step


def speculative_step_costs(events, k: int, max_new_tokens: int | None = None) -> SpeculativeCosts:
    return SpeculativeCosts(draft_forward_s(events), verify_step_s(events, k),
                            drafted=sum(len(e.drafted) for e in events),
                            evaluated=sum(d.evaluated for e in events for d in e.drafted),
                            accepted=sum(e.num_accepted for e in events),
                            capacity=draft_capacity(events, k, max_new_tokens))


def draft_capacity(events, k: int, max_new_tokens: int | None) -> int:
    """Σ over steps of the tokens a step may draft: K, shrunk to remaining − 1 near max_new_tokens."""
    capacity, produced = 0, 0
    for e in events:
        remaining = (max_new_tokens - produced) if max_new_tokens else k + 1
        capacity += max(0, min(k, remaining - 1))
        produced += len(e.emitted_ids)
    return capacity


def baseline_step_costs(events) -> BaselineCosts:
    return BaselineCosts(target_forward_s(events))


def paired_cost_ratios(pairs) -> tuple[float | None, float | None]:
    """(c, v) as medians over a measurement's pairs of each pair's own ratios (paired: both sides of a
    ratio were timed moments apart, under the same load)."""
    cs, vs = [], []
    for pair in pairs:
        spec, base = pair.lead.detail, pair.follow.detail
        if not isinstance(spec, SpeculativeCosts) or not isinstance(base, BaselineCosts) or not base.step_s:
            continue
        if spec.draft_s is not None:
            cs.append(spec.draft_s / base.step_s)
        if spec.verify_s is not None:
            vs.append(spec.verify_s / base.step_s)
    return median(cs), median(vs)


def fit_line(xs, ys) -> tuple[float, float] | None:
    """Theil–Sen line through (x, y): slope = median of pairwise slopes, intercept = median of
    y − slope·x. Robust to a few wild points (a timing disturbed by another process)."""
    points = [(x, y) for x, y in zip(xs, ys) if y is not None]
    if not points:
        return None
    slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(points) for x2, y2 in points[i + 1:] if x2 != x1]
    slope = median(slopes) or 0.0
    return median([y - slope * x for x, y in points]), slope


def relative_errors(predicted, measured) -> list[float]:
    """(predicted − measured) / measured for every point where both exist."""
    return [(p - m) / m for p, m in zip(predicted, measured) if p is not None and m]


# --- what a run achieved, from its events ----------------------------------------------------------

def step_seconds(event) -> float:
    return event.draft_time_s + event.verify_time_s + event.other_time_s


def position_counts(events) -> list[tuple[int, int, int, int]]:
    """Per draft position i: (i, steps that drafted a token at i, of those evaluated, of those accepted)."""
    width = max((len(e.drafted) for e in events), default=0)
    rows = []
    for i in range(width):
        at = [e.drafted[i] for e in events if len(e.drafted) > i]
        rows.append((i, len(at), sum(d.evaluated for d in at), sum(d.accepted for d in at)))
    return rows


def acceptance_by_position(events) -> list[float | None]:
    """Position i: steps that accepted draft token i / steps that drafted a token at i."""
    return [accepted / drafted if drafted else None for _, drafted, _, accepted in position_counts(events)]


def run_record(events, wall_time_s: float, *, target_forwards: int | None = None, **measured) -> RunMetrics:
    """The run's RunMetrics from its events; target_forwards defaults to one per step, and `measured` adds what
    only the engine knows (draft_forwards, forward_time_s, memory)."""
    return RunMetrics(
        new_tokens=sum(len(e.emitted_ids) for e in events), steps=len(events),
        drafted_tokens=sum(e.k for e in events), accepted_tokens=sum(e.num_accepted for e in events),
        alpha=measured_alpha(events), acceptance_by_position=acceptance_by_position(events),
        target_forwards=len(events) if target_forwards is None else target_forwards, wall_time_s=wall_time_s,
        draft_time_s=sum(e.draft_time_s for e in events), verify_time_s=sum(e.verify_time_s for e in events),
        other_time_s=sum(e.other_time_s for e in events), **measured)


def live_metrics(events) -> RunMetrics:
    """Live figures from the events so far: one step is one target forward, the engine time is the steps' own
    (prefill not counted)."""
    return run_record(events, sum(step_seconds(e) for e in events))


def measured_speedup(spec: RunMetrics, baseline: RunMetrics | None) -> float | None:
    """Speculative tokens/s over the measured target-only tokens/s (None until both exist)."""
    if baseline is None or not spec.tokens_per_s or not baseline.tokens_per_s:
        return None
    return spec.tokens_per_s / baseline.tokens_per_s
