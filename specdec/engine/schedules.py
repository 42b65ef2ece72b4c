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
  auto        optimal's choice of K, with E from the acceptance at each draft position (a later draft is accepted
              less often than the first: the i.i.d. alpha overrates long chains), and speculation switched off (plain target steps, K = 0) while the best
              predicted speedup E / (K c + v(K)) is below OFF_BELOW and stays below it with alpha read in
              speculation's favour (the upper end of its Wilson interval, OFF_Z standard errors: clear evidence
              switches it off within a few drafts, mixed evidence takes more), back on above ON_ABOVE (hysteresis);
              while off, one probe step at K = 1 after PROBE_EVERY plain steps keeps alpha measured, the gap
              doubling after each probe that leaves it off (up to PROBE_MAX_GAP: a prompt where drafting does not
              pay should cost few probes), back to PROBE_EVERY once it is on again. Its prior:
              a CostPrior (auto_choice.py: alpha from the drafter's model card, c and v(K) from this machine's
              cached probe); alpha then follows the run's last ALPHA_WINDOW evaluated drafts. The costs stay the
              prior's: they were measured interleaved, where a run's own speculative and plain steps are timed in
              different stretches of the run (on a busy CPU a single slow plain step could switch speculation back on:
              docs/benchmarks.md). Each step's
              choice and why: `decision` (a Decision), copied onto the StepEvent.

The times a schedule is given are a step's drafting and its target side (verification plus the step's
bookkeeping), so ratios match theory.py's measured c and v(K).
"""
from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from specdec.engine.events import K_SCHEDULES
from specdec.engine.theory import expected_tokens_by_position, expected_tokens_per_forward, wilson_upper

SCHEDULES = K_SCHEDULES  # their names, defined once with the settings that name them (events.py)
CONFIDENCE_THRESHOLD = 0.4  # transformers' default assistant_confidence_threshold
ALPHA_PRIOR = (7.0, 3.0)  # optimal: Beta prior on alpha (accepted, rejected pseudo-counts) before evidence
OFF_BELOW = 1.0  # auto: speculation goes off when the best predicted speedup falls below this
ON_ABOVE = 1.05  # ... and back on when it rises above this (between the two it keeps its state)
PROBE_EVERY = 16  # auto, while off: one K = 1 step after this many plain steps
PROBE_MAX_GAP = 64  # ... the gap doubles after each probe that leaves speculation off, up to this
PRIOR_STRENGTH = 2.0  # auto: the prior alpha counts as this many evaluated drafts (alpha varies a lot by prompt:
# a French poem gets 0.0 from drafters whose English chat figure is 0.5, so the run's own evidence must win fast)
ALPHA_WINDOW = 64  # auto: the running alpha's evidence is the last this many evaluated drafts
OFF_Z = 1.0  # auto: speculation that is on goes off only when alpha at the upper end of its Wilson score interval
# (this many standard errors; the prior counted as its strength in drafts) predicts no speedup at any K either: a few
# early rejections where speculation pays leave that bound high (3 in a row after a prior of 0.55: 0.44), while a
# fixed count of drafts would make every losing run pay for that many rejected drafts (docs/benchmarks.md)


@dataclass(frozen=True)
class Decision:
    """What the auto schedule decided before a step, and why (plain data, copied onto the StepEvent)."""

    kind: str  # "speculate", "off" (a plain target step), "probe" (a K = 1 step while off, to measure alpha)
    why: str
    predicted: Optional[float] = None  # the predicted speedup of speculating at the best K


@dataclass(frozen=True)
class CostPrior:
    """What the auto schedule knows before the run: alpha and the measured cost ratios of this machine.

    alpha: per-token acceptance of the drafter for this prompt kind (a prior worth `strength` drafts);
    c: K -> drafting time per drafted token / a target-only step; v: K -> a step's target side at K / a
    target-only step (theory.py's measured c and v(K)); Ks without both are not chosen. tree: the drafter drafts
    a tree of depth K (K then stays at the depth c and v were measured at; they are the whole tree step's)."""

    alpha: float
    c: dict = field(default_factory=dict)
    v: dict = field(default_factory=dict)
    strength: float = PRIOR_STRENGTH
    tree: bool = False


class KSchedule:
    """The interface every K schedule keeps: next_k() before a step, update(...) after it."""

    name = ""
    stop_below: Optional[float] = None  # passed to the drafter (confidence schedule only)
    decision: Optional[Decision] = None  # set by schedules that decide more than K (auto)

    def __init__(self, k_max: int):
        self.k_max = k_max

    def next_k(self) -> int:
        raise NotImplementedError

    def update(self, drafted: int, evaluated: int, accepted: int, draft_time_s: float, verify_time_s: float) -> None:
        pass


class ConstantSchedule(KSchedule):
    """K every step."""

    name = "constant"

    def next_k(self) -> int:
        return self.k_max


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


class ConfidenceSchedule(ConstantSchedule):
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


class AutoSchedule(OptimalSchedule):
    """optimal, plus speculation switched off while it is predicted not to pay (module docstring)."""

    name = "auto"
    probe_every = PROBE_EVERY

    def __init__(self, k_max: int, prior: Optional[CostPrior] = None):
        super().__init__(k_max)
        self.prior = prior or CostPrior(ALPHA_PRIOR[0] / sum(ALPHA_PRIOR), strength=sum(ALPHA_PRIOR))
        self.recent: deque = deque(maxlen=ALPHA_WINDOW)  # True / False per evaluated draft
        self.by_position = [deque(maxlen=ALPHA_WINDOW) for _ in range(k_max)]  # the same, per draft position
        self.plain_times: list[float] = []  # seconds of each plain target step
        self.step_times: dict[int, list[float]] = {}  # K -> seconds of a whole speculative step
        self.plain_run = 0  # plain steps since speculation last ran
        self.failed_probes = 0  # probes since speculation was last on
        self.planned = k_max  # the K of the latest decision
        predicted = self.best()[1]
        self.on = predicted is None or predicted >= 1.0  # starts as the prior predicts

    @property
    def alpha(self) -> float:
        prior = self.prior
        return (prior.alpha * prior.strength + sum(self.recent)) / (prior.strength + len(self.recent))

    def position_alphas(self, k: int) -> list[float]:
        """Acceptance at draft positions 1..k, each given that the drafts before it were accepted: this run's last
        evaluated drafts at that position, with a prior worth prior.strength drafts: the prior alpha at position 1,
        the estimate of the position before at the others (without evidence a position is taken to be as good as
        the one before it; position 2 is evaluated only after position 1 was accepted)."""
        alphas, previous, strength = [], self.prior.alpha, self.prior.strength
        for seen in self.by_position[:k]:
            previous = min((previous * strength + sum(seen)) / (strength + len(seen)), 0.999)
            alphas.append(previous)
        return alphas

    def best_in_favour(self) -> float:
        """The best predicted speedup over the Ks with alpha read in speculation's favour: the upper end of its
        Wilson interval (OFF_Z standard errors; the prior counts as prior.strength drafts), the same at every
        position."""
        alpha = min(wilson_upper(self.alpha, self.prior.strength + len(self.recent), OFF_Z), 0.999)
        return max((speedup for speedup, _ in self.speedups(lambda k: expected_tokens_per_forward(alpha, k))),
                   default=float("inf"))

    def speedups(self, expected) -> list[tuple[float, int]]:
        """(predicted speedup, K) for every K with a known step cost; expected(K): tokens per target forward at K."""
        return [(expected(k) / cost, k) for k in self.ks() if (cost := self.step_cost(k))]

    def ks(self) -> list[int]:
        """The Ks to choose from: those the prior has costs for (a tree: its depth), else 1..k_max."""
        known = [k for k in range(1, self.k_max + 1) if k in self.prior.c and k in self.prior.v]
        return known or ([self.k_max] if self.prior.tree else list(range(1, self.k_max + 1)))

    def step_cost(self, k: int) -> Optional[float]:
        """A speculative step at K over a plain step: the prior's K c + v(K), else (no prior) this run's own
        times where both were measured, else the run's draft time per token and verification (optimal)."""
        if k in self.prior.c and k in self.prior.v:
            return k * self.prior.c[k] + self.prior.v[k]
        measured = self.step_times.get(k)
        if measured and self.plain_times:
            return statistics.median(measured[-16:]) / statistics.median(self.plain_times[-16:])
        if self.draft_times and self.verify_times and self.plain_times:
            t_draft = statistics.median(self.draft_times[-32:])
            return (k * t_draft + self.verify_time(k)) / statistics.median(self.plain_times[-16:])
        return None

    def best(self) -> tuple[int, Optional[float]]:
        """The K with the highest predicted speedup and that speedup (None: costs not known yet)."""
        scored = self.speedups(lambda k: expected_tokens_by_position(self.position_alphas(k)))
        if not scored:
            return self.k_max, None
        predicted, k = max(scored)
        return k, predicted

    def next_k(self) -> int:
        k, predicted = self.best()
        if predicted is None:
            return self._decide(k if self.plain_times else 0, "speculate" if self.plain_times else "off", None,
                                "measuring: no cost figures yet" + ("" if self.plain_times else ", timing a plain step first"))
        if self.on and predicted < OFF_BELOW and self.best_in_favour() < OFF_BELOW:
            self.on = False
        elif not self.on and predicted > ON_ABOVE:
            self.on, self.failed_probes = True, 0
        figures = self.figures(k, predicted)
        if self.on:
            return self._decide(k, "speculate", predicted, figures)
        if self.plain_run >= self.probe_gap():
            self.failed_probes += 1  # back to 0 when the evidence turns speculation on again
            return self._decide(1 if not self.prior.tree else k, "probe", predicted,
                                f"probe after {self.plain_run} plain steps; {figures}")
        return self._decide(0, "off", predicted, f"{figures} (off below {OFF_BELOW}, on above {ON_ABOVE})")

    def probe_gap(self) -> int:
        """Plain steps before the next probe: probe_every, doubled after each probe that left speculation off."""
        return min(self.probe_every * 2 ** self.failed_probes, max(self.probe_every, PROBE_MAX_GAP))

    def figures(self, k: int, predicted: float) -> str:
        cost = self.step_cost(k)
        alphas = self.position_alphas(k)
        return (f"best K={k}: predicted {predicted:.2f}x = E {expected_tokens_by_position(alphas):.2f} / cost {cost:.2f}"
                f" at α={self.alpha:.2f}, by position {'/'.join(f'{a:.2f}' for a in alphas)}"
                f" ({len(self.recent)} evaluated this run)")

    def _decide(self, k: int, kind: str, predicted: Optional[float], why: str) -> int:
        self.decision, self.planned = Decision(kind, why, predicted), k
        return k

    def update(self, drafted, evaluated, accepted, draft_time_s, verify_time_s) -> None:
        if drafted == 0:
            self.plain_times.append(draft_time_s + verify_time_s)
            self.plain_run += 1
            return
        self.plain_run = 0
        super().update(drafted, evaluated, accepted, draft_time_s, verify_time_s)
        outcomes = [True] * accepted + [False] * (evaluated - accepted)  # position 1, 2, ...
        self.recent.extend(outcomes)
        for seen, outcome in zip(self.by_position, outcomes):
            seen.append(outcome)
        k = self.planned if self.prior.tree else drafted  # a tree step's drafted chain is the branch kept
        self.step_times.setdefault(k, []).append(draft_time_s + verify_time_s)


_CLASSES = {cls.name: cls for cls in (ConstantSchedule, HeuristicSchedule, ConfidenceSchedule, OptimalSchedule, AutoSchedule)}


def make_schedule(name: str, k_max: int, prior: Optional[CostPrior] = None) -> KSchedule:
    """A fresh schedule (they keep state); `prior` is the auto schedule's (ignored by the others)."""
    if name == AutoSchedule.name:
        return AutoSchedule(k_max, prior)
    return _CLASSES[name](k_max)
