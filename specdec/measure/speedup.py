"""Speedup measurement: the one place that turns timed runs into "1.42×, 95% interval 1.37–1.48, 9 repeats".

Two contestants are timed in pairs: the lead (speculative decoding) and the follower (target-only),
over the same number of new tokens: the lead runs to its own end (max new tokens or an end-of-text
token) and the follower then produces exactly as many tokens, capped at that count and carrying on
past an end-of-text token of its own. Pairs are interleaved, their order alternating (lead first,
then follower first) so that drift on a shared machine hits both alike, and repeated until the
interval is tight, a repeat limit or a time budget is reached, or the caller stops.

Reported: the median of the per-pair ratios (lead tokens/s over follower tokens/s) and a
distribution-free 95% interval for that median from order statistics (needs at least 6 pairs);
"no measurable difference" when the interval contains 1.0.

`measure` is a generator yielding an Estimate after every pair, so a UI shows a first figure after
one pair and tightens it. Engine-side only: imports neither gradio nor plotly (nor torch).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, ContextManager, Hashable, Iterator, Optional

from specdec.engine.gate import GATE
from specdec.engine.theory import baseline_step_costs, median, speculative_step_costs

CONFIDENCE = 0.95
SAME_TOKENS_RULE = ("both runs time the same number of new tokens: the speculative run stops where it stops "
                    "(max new tokens or end of text) and the target-only run produces exactly as many, "
                    "continuing past an end-of-text token of its own")


# --- statistics ---------------------------------------------------------------------------------------

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


# --- records --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """One timed run: new tokens and engine seconds. `detail`: small per-run figures kept with the pair
    (step costs for the theory); `result`: the full run record, kept only for the latest pair."""

    tokens: int
    seconds: float
    detail: Any = None
    result: Any = field(default=None, compare=False, repr=False)

    @property
    def rate(self) -> Optional[float]:
        return self.tokens / self.seconds if self.seconds > 0 and self.tokens > 0 else None


@dataclass(frozen=True)
class Pair:
    lead: Timing
    follow: Timing
    lead_first: bool

    @property
    def ratio(self) -> Optional[float]:
        lead, follow = self.lead.rate, self.follow.rate
        return lead / follow if lead and follow else None


@dataclass(frozen=True)
class Estimate:
    """What the pairs so far say. ratio: median lead/follower ratio; low/high: its 95% interval."""

    ratio: Optional[float]
    low: Optional[float]
    high: Optional[float]
    repeats: int
    new_tokens: int  # tokens each timed run produced (the lead's count in the latest pair)
    lead_tokens_per_s: Optional[float]  # medians over the pairs
    follow_tokens_per_s: Optional[float]
    smallest: Optional[float]  # the range of the per-pair ratios
    largest: Optional[float]
    state: str = "measuring"  # measuring | done | budget | stopped
    confidence: float = CONFIDENCE
    same_tokens: bool = True  # every pair timed the same number of tokens on both sides

    @property
    def final(self) -> bool:
        return self.state != "measuring"

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def verdict(self) -> Optional[str]:
        """"faster", "slower", "no measurable difference", or None before an interval exists."""
        if not self.has_interval:
            return None
        if self.low > 1.0:
            return "faster"
        if self.high < 1.0:
            return "slower"
        return "no measurable difference"

    @property
    def relative_halfwidth(self) -> Optional[float]:
        if not self.has_interval or not self.ratio:
            return None
        return (self.high - self.low) / 2 / self.ratio

    def describe(self) -> str:
        """'1.42×, 95% interval 1.37–1.48, 9 repeats' (or the range while too few pairs for an interval)."""
        if self.ratio is None:
            return "not measured yet"
        if self.has_interval:
            return (f"{self.ratio:.2f}×, {self.confidence:.0%} interval {self.low:.2f}–{self.high:.2f}, "
                    f"{_repeats(self.repeats)}")
        need = pairs_for_interval(self.confidence)
        spread = f"range {self.smallest:.2f}–{self.largest:.2f}, " if self.repeats > 1 else ""
        return f"{self.ratio:.2f}× ({spread}{_repeats(self.repeats)}; a {self.confidence:.0%} interval needs {need})"

    def to_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict, "description": self.describe(), "rule": SAME_TOKENS_RULE}


def _repeats(n: int) -> str:
    return f"{n} repeat{'s' if n != 1 else ''}"


@dataclass
class Measurement:
    """The pairs measured for one configuration so far (a cache entry: it can be extended later)."""

    key: Hashable = None
    pairs: list[Pair] = field(default_factory=list)
    state: str = "new"  # new | measuring | done | budget | stopped
    confidence: float = CONFIDENCE
    lead_result: Any = None  # the latest pair's full run records (plots, exports)
    follow_result: Any = None

    @property
    def repeats(self) -> int:
        return len(self.pairs)

    def add(self, pair: Pair) -> None:
        self.lead_result, self.follow_result = pair.lead.result, pair.follow.result
        self.pairs.append(Pair(replace(pair.lead, result=None), replace(pair.follow, result=None), pair.lead_first))

    def estimate(self) -> Estimate:
        return estimate(self.pairs, self.state if self.state != "new" else "measuring", self.confidence)


def estimate(pairs: list[Pair], state: str = "measuring", confidence: float = CONFIDENCE) -> Estimate:
    ratios = [p.ratio for p in pairs if p.ratio is not None]
    interval = median_interval(ratios, confidence)
    return Estimate(
        ratio=median(ratios), low=interval[0] if interval else None, high=interval[1] if interval else None,
        repeats=len(ratios), new_tokens=pairs[-1].lead.tokens if pairs else 0,
        lead_tokens_per_s=median(p.lead.rate for p in pairs if p.lead.rate),
        follow_tokens_per_s=median(p.follow.rate for p in pairs if p.follow.rate),
        smallest=min(ratios, default=None), largest=max(ratios, default=None), state=state,
        confidence=confidence, same_tokens=all(p.lead.tokens == p.follow.tokens for p in pairs),
    )


# --- when to stop -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Policy:
    """Repeat until the interval's half-width is within `tolerance` of the median (from `min_repeats`
    on, the fewest with a 95% interval), or `max_repeats`; or until `budget_s` seconds have passed and
    there are `min_repeats`; or, for slow models, until `hard_budget_s` have passed and there are
    `floor_repeats`."""

    min_repeats: int = 10  # the interval is then [2nd smallest, 2nd largest], not the whole range
    floor_repeats: int = 3
    max_repeats: int = 40
    tolerance: float = 0.03
    budget_s: float = 60.0
    hard_budget_s: float = 120.0

    def end_state(self, est: Estimate, elapsed_s: float) -> Optional[str]:
        n = est.repeats
        if n >= self.max_repeats:
            return "done"
        halfwidth = est.relative_halfwidth
        if n >= self.min_repeats and halfwidth is not None and halfwidth <= self.tolerance:
            return "done"
        if (elapsed_s >= self.budget_s and n >= self.min_repeats) or \
                (elapsed_s >= self.hard_budget_s and n >= self.floor_repeats):
            return "budget"
        return None

    def needs_more(self, measurement: Measurement) -> bool:
        """A finished measurement is reused as it is; a new or stopped one is (re)started."""
        return measurement.state not in ("done", "budget") or measurement.repeats < self.floor_repeats


INTERACTIVE = Policy()  # Generate, Race and the API: a first figure after one pair, then it tightens
SWEEP = Policy(min_repeats=6, floor_repeats=3, max_repeats=12, tolerance=0.05, budget_s=1.5, hard_budget_s=1.5)


def measure(lead: Callable[[], Timing], follow: Callable[[int], Timing], policy: Policy = INTERACTIVE, *,
            measurement: Optional[Measurement] = None, should_stop: Callable[[], bool] = lambda: False,
            clock: Callable[[], float] = time.monotonic,
            exclusive: Callable[[], ContextManager] = GATE.exclusive) -> Iterator[Estimate]:
    """Generator: times (lead, follow) pairs, alternating which runs first, and yields the Estimate
    after each pair; the last one yielded is final (its state says why it ended). `follow(n)` must
    produce exactly n new tokens. A finished `measurement` is yielded once, unchanged; a stopped one
    is continued. Stop (should_stop) is checked before every run; a half-done pair is dropped. Each
    pair holds the process's compute gate exclusively (engine/gate.py): nothing else computes while
    it is timed, and others' streamed steps get in between pairs."""
    m = measurement if measurement is not None else Measurement()
    if not policy.needs_more(m):
        yield m.estimate()
        return
    m.state, started = "measuring", clock()
    while True:
        with exclusive():
            pair = _timed_pair(lead, follow, m, should_stop)
        if pair is None:
            m.state = "stopped"
            yield m.estimate()
            return
        m.add(pair)
        end = policy.end_state(m.estimate(), clock() - started)
        if end is not None:
            m.state = end
        yield m.estimate()
        if end is not None:
            return


def _timed_pair(lead, follow, m: Measurement, should_stop) -> Optional[Pair]:
    lead_first = m.repeats % 2 == 0  # the first pair, then every other one
    if should_stop():
        return None
    if lead_first:
        first = lead()
        if should_stop():
            return None
        return Pair(first, follow(first.tokens), True)
    second = follow(m.pairs[-1].lead.tokens)
    if should_stop():
        return None
    return Pair(lead(), second, False)


# --- the engine's runs as contestants --------------------------------------------------------------------

def model_name(model) -> Optional[str]:
    return None if model is None else getattr(model, "name", str(model))


def config_key(target, draft, prompt_ids, settings) -> tuple:
    """What a measurement depends on: target, draft (or drafter), device, dtype, the prompt's ids and
    every decoding setting (the whole frozen DecodeSettings: K, its schedule, temperature, top-p/k,
    max new tokens, seed, …)."""
    return (model_name(target), str(getattr(target, "device", "")), str(getattr(target, "dtype", "")),
            model_name(draft), tuple(int(i) for i in prompt_ids), settings)


def engine_contestants(engine, target, draft, prompt_ids, settings) -> tuple[Callable, Callable]:
    """(lead, follow) for `measure`: speculative decoding with `draft`, and the target alone.
    `engine` is the specdec package (or a fake with the same Generation / generate)."""
    def lead() -> Timing:
        result = engine.generate(target, draft, prompt_ids, settings)
        return Timing(result.metrics.new_tokens, result.metrics.wall_time_s,
                      speculative_step_costs(result.events, settings.k, settings.max_new_tokens), result)

    def follow(tokens: int) -> Timing:
        # ignore_eos: the target-only run goes on past its own end-of-text to match the speculative count
        result = engine.start(target, None, prompt_ids, replace(settings, max_new_tokens=max(1, tokens)),
                                   ignore_eos=True).result()
        return Timing(result.metrics.new_tokens, result.metrics.wall_time_s, baseline_step_costs(result.events),
                      result)

    return lead, follow


def measure_speedup(engine, target, draft, prompt_ids, settings, *, cache: Optional[dict] = None,
                    policy: Policy = INTERACTIVE, should_stop: Callable[[], bool] = lambda: False,
                    remember: Optional[Callable] = None) -> Iterator[Estimate]:
    """Speculative vs target-only for one configuration, through the per-configuration cache: a
    finished measurement is reused (the same figure everywhere), an unfinished one is continued."""
    key = config_key(target, draft, prompt_ids, settings)
    cache = {} if cache is None else cache
    m = cache.get(key)
    if m is None:
        m = Measurement(key=key)
        (remember or _store)(cache, key, m)
    lead, follow = engine_contestants(engine, target, draft, prompt_ids, settings)
    yield from measure(lead, follow, policy, measurement=m, should_stop=should_stop)


def _store(cache: dict, key, value) -> None:
    cache[key] = value


def cached(cache: dict, target, draft, prompt_ids, settings) -> Optional[Measurement]:
    return cache.get(config_key(target, draft, prompt_ids, settings))
