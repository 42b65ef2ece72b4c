"""Sweeps over draft length K, temperature and draft model, measured against a target-only baseline.

No UI here: the Sweep tab and scripts/measure_sweep.py drive it. `run` is the engine's
generate(target, draft, ids, settings) -> RunResult (draft None = target-only), injected for testing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Optional

from .events import DecodeSettings
from .theory import (best_k, cost_ratio, draft_forward_s, measured_speedup,
                     result_stats, target_forward_s, theoretical_speedup)

BASELINE_CACHE_SIZE = 32


@dataclass(frozen=True)
class SweepPoint:
    draft: str
    k: int
    temperature: float


@dataclass
class SweepRow:
    draft: str
    k: int
    temperature: float
    new_tokens: int
    drafted: int
    evaluated: int
    accepted: int
    acceptance_rate: Optional[float]  # accepted / drafted
    tokens_per_forward: Optional[float]
    tokens_per_s: Optional[float]
    baseline_tokens_per_s: Optional[float]
    speedup: Optional[float]  # measured
    draft_forward_ms: Optional[float]
    target_forward_ms: Optional[float]
    c: Optional[float]
    # filled in by add_theory once the whole sweep is known:
    alpha: Optional[float] = None  # pooled over every K of this draft and temperature
    c_pooled: Optional[float] = None  # median over this draft and temperature's runs
    theory_speedup: Optional[float] = None
    theory_best_k: Optional[int] = None
    best_measured: bool = False


def _parse_list(text: str, convert, lo, hi, what: str) -> list:
    values = []
    for part in filter(None, (p.strip() for p in re.split(r"[,\s;]+", str(text or "")))):
        bounds = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part) if convert is int else None
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


def plan_sweep(drafts: list[str], ks: list[int], temperatures: list[float]) -> list[SweepPoint]:
    """Every combination, temperature-major so each baseline is measured once, early."""
    return [SweepPoint(d, k, t) for t in temperatures for d in drafts for k in ks]


def baseline_key(target_name: str, ids, settings: DecodeSettings) -> tuple:
    """What a target-only measurement depends on (not K, not the draft)."""
    return (target_name, tuple(ids), settings.temperature, settings.top_k, settings.top_p,
            settings.max_new_tokens, settings.seed)


def remember(cache: dict, key, value, size: int = BASELINE_CACHE_SIZE) -> None:
    """Bounded insertion-ordered cache: the oldest entry goes when it is full."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > size:
        cache.pop(next(iter(cache)))


def measure_row(point: SweepPoint, spec_result, baseline_result) -> SweepRow:
    """One sweep point from the speculative and target-only RunResults (same prompt and settings)."""
    spec_events, baseline_events = spec_result.events, baseline_result.events
    spec, base = result_stats(spec_result), result_stats(baseline_result)
    d_fwd, t_fwd = draft_forward_s(spec_events), target_forward_s(baseline_events)
    return SweepRow(
        draft=point.draft, k=point.k, temperature=point.temperature, new_tokens=spec.new_tokens,
        drafted=spec.drafted, evaluated=sum(d.evaluated for e in spec_events for d in e.drafted),
        accepted=spec.accepted, acceptance_rate=spec.acceptance_rate, tokens_per_forward=spec.tokens_per_forward,
        tokens_per_s=spec.tokens_per_s, baseline_tokens_per_s=base.tokens_per_s,
        speedup=measured_speedup(spec, base), draft_forward_ms=None if d_fwd is None else d_fwd * 1e3,
        target_forward_ms=None if t_fwd is None else t_fwd * 1e3, c=cost_ratio(spec_events, baseline_events))


class SweepRunner:
    """Runs sweep points one by one; baselines come from (and go to) a shared per-session cache."""

    def __init__(self, run: Callable, target, drafts: dict, ids, base: DecodeSettings,
                 baseline_cache: dict | None = None):
        self.run, self.target, self.drafts, self.ids, self.base = run, target, drafts, list(ids), base
        self.cache = {} if baseline_cache is None else baseline_cache

    def warm_up(self, tokens: int = 8) -> None:
        """Short untimed runs (target-only and with each draft) so that the first measured point does
        not pay for one-off initialisation; nothing from them is kept."""
        settings = replace(self.base, max_new_tokens=min(tokens, self.base.max_new_tokens))
        for draft in (None, *self.drafts.values()):
            self.run(self.target, draft, self.ids, settings)

    def settings_for(self, point: SweepPoint) -> DecodeSettings:
        return replace(self.base, k=point.k, temperature=point.temperature)

    def baseline(self, settings: DecodeSettings):
        key = baseline_key(self.target.name, self.ids, settings)
        if key not in self.cache:
            remember(self.cache, key, self.run(self.target, None, self.ids, settings))
        return self.cache[key]

    def measure(self, point: SweepPoint) -> SweepRow:
        settings = self.settings_for(point)
        baseline = self.baseline(settings)
        spec = self.run(self.target, self.drafts[point.draft], self.ids, settings)
        return measure_row(point, spec, baseline)

    def rows(self, points: list[SweepPoint]) -> Iterator[SweepRow]:
        for point in points:
            yield self.measure(point)


def _median(values):
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


def add_theory(rows: list[SweepRow], k_max: int = 16) -> list[SweepRow]:
    """Pools alpha and c per (draft, temperature) over every K measured (c: the median; sampling adds
    per-token work, so c depends on temperature), then fills the theory columns and marks the best
    measured K of each group."""
    for group in {(r.draft, r.temperature) for r in rows}:
        members = [r for r in rows if (r.draft, r.temperature) == group]
        evaluated = sum(r.evaluated for r in members)
        alpha = sum(r.accepted for r in members) / evaluated if evaluated else None
        c = _median(r.c for r in members)
        measured = [r for r in members if r.speedup is not None]
        best = max(measured, key=lambda r: r.speedup) if measured else None
        for r in members:
            r.alpha, r.c_pooled, r.best_measured = alpha, c, r is best
            if alpha is not None and c is not None:
                r.theory_speedup = theoretical_speedup(alpha, r.k, c)
                r.theory_best_k = best_k(alpha, c, k_max)
    return rows


def theory_curve(alpha: float, c: float, ks: list[int]) -> list[float]:
    return [theoretical_speedup(alpha, k, c) for k in ks]
