"""Sweeps over draft length K, temperature, draft and K schedule, each point a measured speedup
(specdec.measure.speedup). For an adaptive schedule (specdec.engine.schedules) a point's K is the largest K the
schedule may draft in a step (heuristic and optimal also start there).

No UI here: the Sweep tab and experiments/measure_sweep.py drive it. `engine` is the specdec package (or a
fake with the same Generation / generate), injected for testing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Optional, Sequence

from specdec.engine.events import DecodeSettings
from specdec.engine.schedules import SCHEDULES
from specdec.engine.theory import best_k, fit_line, median, paired_cost_ratios, relative_errors, theoretical_speedup
from specdec.measure.speedup import SWEEP, Estimate, Measurement, Policy, config_key, measure_speedup

CONSTANT = SCHEDULES[0]  # the schedule the theory describes and adaptive ones are compared with
CACHE_SIZE = 64  # measurements kept per session
THEORY_MIN_SHARE = 0.9  # the theory assumes K drafted tokens every step: drawn only where that nearly holds


@dataclass(frozen=True)
class SweepPoint:
    draft: str
    k: int  # an adaptive schedule's largest K
    temperature: float
    schedule: str = CONSTANT


@dataclass
class SweepRow:
    draft: str
    k: int  # an adaptive schedule's largest K
    temperature: float
    new_tokens: int
    drafted: int
    evaluated: int
    accepted: int
    acceptance_rate: Optional[float]  # accepted / drafted
    alpha_point: Optional[float]  # α at this K alone: accepted / evaluated
    tokens_per_forward: Optional[float]  # bonus included
    tokens_per_s: Optional[float]  # speculative, median over the repeats
    baseline_tokens_per_s: Optional[float]  # target-only, median over the repeats
    speedup: Optional[float]  # measured: median of the per-pair ratios
    speedup_low: Optional[float]  # its 95% interval (None with fewer than 6 repeats)
    speedup_high: Optional[float]
    repeats: int
    proposal_share: Optional[float]  # drafted / the tokens the steps could have drafted (1.0: always K)
    c: Optional[float]  # draft forward / target-only step, median of the pairs
    v: Optional[float]  # v(K): speculative step's target side / target-only step, median of the pairs
    # filled in by add_theory once the whole sweep is known:
    alpha: Optional[float] = None  # α pooled over every K of this draft and temperature
    c_pooled: Optional[float] = None  # median c over this draft and temperature's points
    v_fit: Optional[float] = None  # v(K) from a line fitted over this group's K values (Theil–Sen)
    theory_textbook: Optional[float] = None  # E / (K·c + 1)
    theory_measured: Optional[float] = None  # E / (K·c + v_fit(K))
    theory_free_draft: Optional[float] = None  # E / v_fit(K): the measured form if drafting cost nothing (c = 0)
    theory_best_k: Optional[int] = None  # the textbook form's best K
    best_measured: bool = False
    tree: bool = False  # its runs drafted trees (tree.py), which the chain theory does not describe
    # memory, in MemoryReport's terms (specdec/engine/events.py), of the point's latest speculative run:
    draft_param_bytes: Optional[int] = None
    draft_kv_bytes: Optional[int] = None
    target_kv_bytes: Optional[int] = None
    verify_kv_bytes: Optional[int] = None
    extra_bytes: Optional[int] = None  # extra memory: draft weights + draft KV cache + verification slots
    peak_delta_bytes: Optional[int] = None  # measured; coarse where peak_source says so
    baseline_peak_delta_bytes: Optional[int] = None  # the same for the latest target-only run
    peak_source: Optional[str] = None
    target_param_bytes: Optional[int] = None  # the target's weights as held, and which weights they are
    target_weights: Optional[str] = None  # (MemoryReport.target_weights: "Q4_1 as published", "float16 from Q4_1", ...)
    schedule: str = CONSTANT


def _parse_list(text: str, convert, lo, hi, what: str) -> list:
    values = []
    for part in filter(None, (p.strip() for p in re.split(r"[,\s;]+", str(text or "")))):
        bounds = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part) if convert is int else None
        if bounds and not lo <= int(bounds[1]) <= int(bounds[2]) <= hi:  # check before expanding "1-99999999"
            raise ValueError(f"{what} values must lie in [{lo}, {hi}] (a range goes low to high): got {part}.")
        try:
            values.extend(range(int(bounds[1]), int(bounds[2]) + 1) if bounds else [convert(part)])
        except ValueError:
            raise ValueError(f"Cannot read {part!r} as a {what} value.") from None
    if not values:
        raise ValueError(f"Give at least one {what} value.")
    bad = [v for v in values if not lo <= v <= hi]
    if bad:
        raise ValueError(f"{what} values must lie in [{lo}, {hi}]: got {bad[0]}.")
    return sorted(set(values))


def parse_ks(text: str, k_max: int = 16) -> list[int]:
    """'1-8' or '1, 2, 4, 8' -> sorted distinct draft lengths in 1..k_max."""
    return _parse_list(text, int, 1, k_max, "K")


def parse_temperatures(text: str) -> list[float]:
    """'0, 0.7, 1' -> sorted distinct temperatures in [0, 2]."""
    return _parse_list(text, float, 0.0, 2.0, "temperature")


def parse_schedules(names) -> list[str]:
    """The K schedules picked (a name or a list), in SCHEDULES' order; unknown names are refused."""
    picked = {str(n).strip() for n in ([names] if isinstance(names, str) else names or []) if str(n).strip()}
    unknown = sorted(picked - set(SCHEDULES))
    if unknown:
        raise ValueError(f"Unknown K schedule {unknown[0]!r}: choose from {', '.join(SCHEDULES)}.")
    if not picked:
        raise ValueError("Pick at least one K schedule.")
    return [s for s in SCHEDULES if s in picked]


def plan_sweep(drafts: list[str], ks: list[int], temperatures: list[float],
               schedules: Sequence[str] = (CONSTANT,)) -> list[SweepPoint]:
    """Every combination, temperature-major, then draft, schedule and K."""
    return [SweepPoint(d, k, t, s) for t in temperatures for d in drafts for s in schedules for k in ks]


def remember(cache: dict, key, value, size: int = CACHE_SIZE) -> None:
    """Bounded insertion-ordered cache: the oldest entry goes when it is full."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > size:
        cache.pop(next(iter(cache)))


def make_row(point: SweepPoint, measurement: Measurement) -> SweepRow:
    """One sweep point from its measurement: speedup and interval, acceptance, c and v(K)."""
    est, spec = measurement.estimate(), measurement.lead_result
    costs = measurement.pairs[-1].lead.detail if measurement.pairs else None
    drafted, evaluated, accepted = (costs.drafted, costs.evaluated, costs.accepted) if costs else (0, 0, 0)
    c, v = paired_cost_ratios(measurement.pairs)
    metrics = spec.metrics if spec is not None else None
    return SweepRow(
        draft=point.draft, k=point.k, temperature=point.temperature, schedule=point.schedule, new_tokens=est.new_tokens,
        drafted=drafted, evaluated=evaluated, accepted=accepted,
        acceptance_rate=accepted / drafted if drafted else None,
        alpha_point=accepted / evaluated if evaluated else None,
        tokens_per_forward=metrics.tokens_per_forward if metrics else None,
        tokens_per_s=est.lead_tokens_per_s, baseline_tokens_per_s=est.follow_tokens_per_s,
        speedup=est.ratio, speedup_low=est.low, speedup_high=est.high, repeats=est.repeats,
        proposal_share=costs.proposal_share if costs else None, c=c, v=v,
        tree=spec is not None and any(e.tree_nodes for e in spec.events), **memory_fields(measurement))


MEMORY_FIELDS = ("draft_param_bytes", "draft_kv_bytes", "target_kv_bytes", "verify_kv_bytes", "extra_bytes",
                 "peak_delta_bytes", "peak_source", "target_param_bytes", "target_weights")


def memory_fields(measurement: Measurement) -> dict:
    """A point's memory columns from its latest pair's runs (none when they carry no MemoryReport)."""
    spec, base = (_memory_of(r) for r in (measurement.lead_result, measurement.follow_result))
    fields = {name: getattr(spec, name) for name in MEMORY_FIELDS} if spec is not None else {}
    return {**fields, "baseline_peak_delta_bytes": base.peak_delta_bytes if base is not None else None}


def _memory_of(result):
    return result.metrics.memory if result is not None and result.metrics is not None else None


def pareto_front(rows: list[SweepRow]) -> list[SweepRow]:
    """Per temperature, the points no other point beats on both counts (as fast or faster for no more extra
    memory, better on one): sorted by extra memory. Points without a speedup or extra memory are left out."""
    front = []
    for temperature in sorted({r.temperature for r in rows}):
        known = [r for r in rows
                 if r.temperature == temperature and r.speedup is not None and r.extra_bytes is not None]
        best = None
        for r in sorted(known, key=lambda r: (r.extra_bytes, -r.speedup)):
            if best is None or r.speedup > best:
                front.append(r)
                best = r.speedup
    return front


class SweepRunner:
    """Measures sweep points one by one, each through the per-session measurement cache."""

    def __init__(self, engine, target, drafts: dict, ids, base: DecodeSettings, cache: dict | None = None,
                 policy: Policy = SWEEP, should_stop: Callable[[], bool] = lambda: False):
        self.engine, self.target, self.drafts, self.ids, self.base = engine, target, drafts, list(ids), base
        self.cache = {} if cache is None else cache
        self.policy, self.should_stop = policy, should_stop

    def warm_up(self, tokens: int = 8) -> None:
        """Short untimed runs (target-only and with each draft) so that the first measured point does
        not pay for one-off initialisation; nothing from them is kept."""
        settings = replace(self.base, max_new_tokens=min(tokens, self.base.max_new_tokens))
        for draft in (None, *self.drafts.values()):
            self.engine.generate(self.target, draft, self.ids, settings)

    def settings_for(self, point: SweepPoint) -> DecodeSettings:
        return replace(self.base, k=point.k, temperature=point.temperature, k_schedule=point.schedule)

    def estimates(self, point: SweepPoint) -> Iterator[Estimate]:
        """The point's estimate after every repeat (see specdec.measure.speedup.measure)."""
        yield from measure_speedup(self.engine, self.target, self.drafts[point.draft], self.ids,
                                   self.settings_for(point), cache=self.cache, policy=self.policy,
                                   should_stop=self.should_stop, remember=remember)

    def measure(self, point: SweepPoint) -> Optional[SweepRow]:
        """The point's row, or None when Stop came before its first repeat."""
        last = None
        for last in self.estimates(point):
            pass
        if last is None or last.repeats == 0:
            return None
        return make_row(point, self.measurement(point))

    def measurement(self, point: SweepPoint) -> Measurement:
        return self.cache[config_key(self.target, self.drafts[point.draft], self.ids, self.settings_for(point))]

    def rows(self, points: list[SweepPoint]) -> Iterator[SweepRow]:
        for point in points:
            row = self.measure(point)
            if row is None:
                return
            yield row


def group_key(row) -> tuple[str, str, float]:
    """A sweep's line: one draft, K schedule and temperature, over K."""
    return row.draft, row.schedule, row.temperature


def add_theory(rows: list[SweepRow], k_max: int = 16) -> list[SweepRow]:
    """Per (draft, schedule, temperature), over every K measured: pools α (accepted / evaluated) and c
    (the median; sampling adds per-token work, so c depends on temperature) and fits v(K) as a line in
    K (robustly: verifying K + 1 tokens grows about linearly with K); then fills both theory forms
    (textbook v = 1, measured v(K)) and the measured form with c = 0 (the most any drafter this accepted could
    give at this verification cost) where the theory applies (theory_applies), and marks the best measured K
    of each group."""
    for group in {group_key(r) for r in rows}:
        members = [r for r in rows if group_key(r) == group]
        evaluated = sum(r.evaluated for r in members)
        alpha = sum(r.accepted for r in members) / evaluated if evaluated else None
        c = median(r.c for r in members)
        line = fit_line([r.k for r in members], [r.v for r in members])
        measured = [r for r in members if r.speedup is not None]
        best = max(measured, key=lambda r: r.speedup) if measured else None
        for r in members:
            r.alpha, r.c_pooled, r.best_measured = alpha, c, r is best
            r.v_fit = max(line[0] + line[1] * r.k, 1e-6) if line is not None else None
            r.theory_textbook = r.theory_measured = r.theory_free_draft = r.theory_best_k = None
            if alpha is not None and c is not None and theory_applies(r):
                r.theory_textbook = theoretical_speedup(alpha, r.k, c)
                if r.v_fit:
                    r.theory_measured = theoretical_speedup(alpha, r.k, c, r.v_fit)
                    r.theory_free_draft = theoretical_speedup(alpha, r.k, 0.0, r.v_fit)
                r.theory_best_k = best_k(alpha, c, k_max)
    return rows


def theory_applies(row: SweepRow) -> bool:
    """The i.i.d. theory at K describes runs that draft a chain of K tokens (almost) every step: constant K
    only, and no tree drafts."""
    return row.schedule == CONSTANT and not row.tree and (
        row.proposal_share is None or row.proposal_share >= THEORY_MIN_SHARE)


@dataclass(frozen=True)
class ScheduleComparison:
    """An adaptive schedule's best point against the best constant K's, for one draft and temperature."""

    schedule: str
    best: SweepRow  # the schedule's best measured (largest) K
    constant: Optional[SweepRow]  # the best constant K; None when the sweep measured no constant K

    @property
    def verdict(self) -> Optional[str]:
        """"faster" / "slower" when the 95% intervals are disjoint, "no measurable difference" when they
        overlap; None without both intervals."""
        a, b = self.best, self.constant
        if b is None or None in (a.speedup_low, a.speedup_high, b.speedup_low, b.speedup_high):
            return None
        if a.speedup_low > b.speedup_high:
            return "faster"
        if a.speedup_high < b.speedup_low:
            return "slower"
        return "no measurable difference"


def compare_schedules(rows: list[SweepRow]) -> list[ScheduleComparison]:
    """Per (draft, temperature), each adaptive schedule's best point next to the best constant K's
    (the points add_theory marked best)."""
    best = {group_key(r): r for r in rows if r.best_measured}
    return [ScheduleComparison(s, row, best.get((d, CONSTANT, t)))
            for (d, s, t), row in sorted(best.items(), key=lambda item: group_order(item[0])) if s != CONSTANT]


def group_order(group: tuple[str, str, float]) -> tuple:
    """Sorts groups by draft, temperature, then schedule in SCHEDULES order."""
    draft, schedule, temperature = group
    return draft, temperature, SCHEDULES.index(schedule) if schedule in SCHEDULES else len(SCHEDULES)


@dataclass(frozen=True)
class FitError:
    """How far a theory form is from the measured points: mean and largest relative error."""

    form: str
    mean: Optional[float]  # signed mean of (theory − measured) / measured
    mean_abs: Optional[float]
    worst: Optional[float]  # the signed error of largest magnitude
    points: int


def fit_errors(rows: list[SweepRow]) -> list[FitError]:
    """Both forms' errors against the measured speedups of `rows` (one draft and temperature, or all)."""
    measured = [r.speedup for r in rows]
    fits = []
    for form, values in (("textbook", [r.theory_textbook for r in rows]),
                         ("measured", [r.theory_measured for r in rows])):
        errors = relative_errors(values, measured)
        fits.append(FitError(form, sum(errors) / len(errors) if errors else None,
                             sum(map(abs, errors)) / len(errors) if errors else None,
                             max(errors, key=abs) if errors else None, len(errors)))
    return fits
