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

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, ContextManager, Hashable, Iterator, Optional

from specdec.engine.gate import GATE
from specdec.engine.theory import baseline_step_costs, median, speculative_step_costs
from specdec.measure.intervals import CONFIDENCE, median_interval, pairs_for_interval

SAME_TOKENS_RULE = ("both runs time the same number of new tokens: the speculative run stops where it stops "
                    "(max new tokens or end of text) and the target-only run produces exactly as many, "
                    "continuing past an end-of-text token of its own")


# --- records --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """One timed run: new tokens and engine seconds. `detail`: small per-run figures kept with the pair
    (step costs for the theory); `result`: the full run record, kept only for the latest pair."""

    tokens: int
    seconds: float
    detail: Any = None
    result: Any = field(default=None, compare=False, repr=False)
    target_forwards: Optional[int] = None  # a speculative run's target forwards (None: not known)

    @property
    def rate(self) -> Optional[float]:
        return self.tokens / self.seconds if self.seconds > 0 and self.tokens > 0 else None

    @property
    def tokens_per_forward(self) -> Optional[float]:
        return self.tokens / self.target_forwards if self.target_forwards else None


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
    state: str = "measuring"  # measuring | done | budget | stopped | fault
    confidence: float = CONFIDENCE
    same_tokens: bool = True  # every pair timed the same number of tokens on both sides
    fault: Optional[str] = None  # why the timed runs are not a measurement of the run shown (state "fault")
    bound: Optional[float] = None  # the most the ratio can be: the run's tokens per target forward (ShownRun)

    @property
    def final(self) -> bool:
        return self.state != "measuring"

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def verdict(self) -> Optional[str]:
        """"faster", "slower", "no measurable difference", or None before an interval exists or for a fault."""
        if not self.has_interval or self.fault is not None:
            return None
        if self.low > 1.0:
            return "faster"
        if self.high < 1.0:
            return "slower"
        return "no measurable difference"

    @property
    def above_bound(self) -> bool:
        """The median so far is above what the run's tokens per target forward allow (beyond noise): not a result
        to show; a measurement that ends so, or whose interval lies above, is a fault (bound_fault)."""
        return self.bound is not None and self.ratio is not None and self.ratio > self.bound * (1 + BOUND_SLACK)

    @property
    def relative_halfwidth(self) -> Optional[float]:
        if not self.has_interval or not self.ratio:
            return None
        return (self.high - self.low) / 2 / self.ratio

    def describe(self) -> str:
        """'1.42×, 95% interval 1.37–1.48, 9 repeats' (or the range while too few pairs for an interval)."""
        if self.fault is not None:
            return f"no valid measurement: {self.fault}"
        if self.ratio is None:
            return "not measured yet"
        if self.above_bound:
            return (f"checking ({_repeats(self.repeats)} so far run faster than the run's {self.bound:.2f} tokens per "
                    "target forward allow)")
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
    fault: Optional[str] = None  # set once a pair could not be a measurement of the run shown (check_pair)

    @property
    def repeats(self) -> int:
        return len(self.pairs)

    def add(self, pair: Pair) -> None:
        self.lead_result, self.follow_result = pair.lead.result, pair.follow.result
        self.pairs.append(Pair(replace(pair.lead, result=None), replace(pair.follow, result=None), pair.lead_first))

    def estimate(self, shown: Optional["ShownRun"] = None) -> Estimate:
        return estimate(self.pairs, self.state if self.state != "new" else "measuring", self.confidence, self.fault,
                        shown)


def estimate(pairs: list[Pair], state: str = "measuring", confidence: float = CONFIDENCE,
             fault: Optional[str] = None, shown: Optional["ShownRun"] = None) -> Estimate:
    """What `pairs` say. The bound on the ratio: the shown run's tokens per target forward, else the timed speculative
    runs' own (their median), where known."""
    ratios = [p.ratio for p in pairs if p.ratio is not None]
    bound = shown.tokens_per_forward if shown is not None else median(
        p.lead.tokens_per_forward for p in pairs if p.lead.tokens_per_forward)
    interval = median_interval(ratios, confidence)
    return Estimate(
        ratio=median(ratios), low=interval[0] if interval else None, high=interval[1] if interval else None,
        repeats=len(ratios), new_tokens=pairs[-1].lead.tokens if pairs else 0,
        lead_tokens_per_s=median(p.lead.rate for p in pairs if p.lead.rate),
        follow_tokens_per_s=median(p.follow.rate for p in pairs if p.follow.rate),
        smallest=min(ratios, default=None), largest=max(ratios, default=None), state=state,
        confidence=confidence, same_tokens=all(p.lead.tokens == p.follow.tokens for p in pairs), fault=fault,
        bound=bound,
    )


# --- what a measurement is of --------------------------------------------------------------------------------

BOUND_SLACK = 0.10  # timing noise allowed above the tokens-per-forward bound before the figure is a fault


@dataclass(frozen=True)
class ShownRun:
    """The run a speedup is reported for. Its timed repeats must be runs of it: a deterministic run (greedy, or
    sampled with a seed) decodes the same tokens in the same number of target forwards every time. And no
    speculative run beats the target alone by more than its tokens per target forward: each of its target forwards
    costs at least one target-only step (verifying K + 1 tokens costs no less than one), so a ratio above that,
    beyond timing noise (BOUND_SLACK), is a fault of the measurement, never a result."""

    token_ids: tuple
    target_forwards: int
    deterministic: bool

    @classmethod
    def of(cls, result) -> "ShownRun":
        settings = result.settings
        return cls(tuple(result.token_ids), result.metrics.target_forwards,
                   settings.mode == "greedy" or settings.seed is not None)

    @property
    def tokens_per_forward(self) -> Optional[float]:
        return len(self.token_ids) / self.target_forwards if self.target_forwards else None


def pair_fault(pair: Pair, shown: Optional[ShownRun]) -> Optional[str]:
    """Why this timed pair is not a repeat of the deterministic run shown (None: it is, or there is no such run)."""
    result = pair.lead.result
    if shown is None or not shown.deterministic or getattr(result, "metrics", None) is None:
        return None
    if tuple(result.token_ids) != shown.token_ids:
        return "a timed repeat decoded other tokens than the run shown"
    if result.metrics.target_forwards != shown.target_forwards:
        return (f"a timed repeat took {result.metrics.target_forwards} target forwards for the "
                f"{shown.target_forwards} of the run shown: its drafter did not draft what it drafted in the run shown")
    return None


def bound_fault(est: Estimate) -> Optional[str]:
    """A ratio above the run's tokens per target forward (its bound) is a fault once the interval lies above it, or
    the measurement ends with its median above it (beyond noise, BOUND_SLACK)."""
    if not est.above_bound or not (est.final or (est.has_interval and est.low > est.bound * (1 + BOUND_SLACK))):
        return None
    return (f"the timed repeats ran {est.ratio:.2f}× the target alone, above the {est.bound:.2f} tokens per target "
            "forward of the run, which no speculative run can beat")


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
        """A finished or faulted measurement is reused as it is; a new or stopped one is (re)started."""
        if measurement.state == "fault":
            return False
        return measurement.state not in ("done", "budget") or measurement.repeats < self.floor_repeats


INTERACTIVE = Policy()  # Generate, Race and the API: a first figure after one pair, then it tightens
SWEEP = Policy(min_repeats=6, floor_repeats=3, max_repeats=12, tolerance=0.05, budget_s=1.5, hard_budget_s=1.5)


def measure(lead: Callable[[], Timing], follow: Callable[[int], Timing], policy: Policy = INTERACTIVE, *,
            measurement: Optional[Measurement] = None, should_stop: Callable[[], bool] = lambda: False,
            clock: Callable[[], float] = time.monotonic,
            exclusive: Callable[[], ContextManager] = GATE.exclusive,
            shown: Optional[ShownRun] = None) -> Iterator[Estimate]:
    """Generator: times (lead, follow) pairs, alternating which runs first, and yields the Estimate
    after each pair; the last one yielded is final (its state says why it ended). `follow(n)` must
    produce exactly n new tokens. A finished `measurement` is yielded once, unchanged; a stopped one
    is continued. Stop (should_stop) is checked before every run; a half-done pair is dropped. Each
    pair holds the process's compute gate exclusively (engine/gate.py): nothing else computes while
    it is timed, and others' streamed steps get in between pairs. `shown`: the run the figure is for;
    a pair that is not a repeat of it, or a ratio above its tokens per forward, ends the measurement
    in state "fault" with the reason (pair_fault, bound_fault), and no figure is reported."""
    m = measurement if measurement is not None else Measurement()
    if not policy.needs_more(m):
        yield m.estimate(shown)
        return
    m.state, started = "measuring", clock()
    while True:
        with exclusive():
            pair = _timed_pair(lead, follow, m, should_stop)
        if pair is None:
            m.state = "stopped"
            yield m.estimate(shown)
            return
        fault = pair_fault(pair, shown)
        m.add(pair)
        end = policy.end_state(m.estimate(shown), clock() - started)
        if end is not None:
            m.state = end
        fault = fault or bound_fault(m.estimate(shown))
        if fault is not None:
            m.fault, m.state = fault, "fault"
        yield m.estimate(shown)
        if end is not None or fault is not None:
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


def config_key(target, draft, prompt_ids, settings, learned=None) -> tuple:
    """What a measurement depends on: target, draft (or drafter), device, dtype, the prompt's ids, every
    decoding setting (the whole frozen DecodeSettings: K, its schedule, temperature, top-p/k, max new tokens,
    seed, …) and, for a drafter that learns across requests, what it had learnt (its LearnedState's fingerprint)."""
    key = (model_name(target), str(getattr(target, "device", "")), str(getattr(target, "dtype", "")),
           model_name(draft), tuple(int(i) for i in prompt_ids), settings)
    return key if learned is None else (*key, learned.fingerprint)


def drafter_for_each_run(draft, learned=None) -> Callable[[], Any]:
    """The drafter each timed run uses: `draft` itself, or, for one that learns across requests, a fresh replay of
    `learned` (its snapshot; taken now when None) per run, so every repeat starts from the same state and none
    drafts from an earlier repeat's output (Drafter.replaying)."""
    if not getattr(draft, "learns_across_requests", False):
        return lambda: draft
    state = learned if learned is not None else draft.snapshot()
    return lambda: draft.replaying(state)


def engine_contestants(engine, target, draft, prompt_ids, settings, learned=None) -> tuple[Callable, Callable]:
    """(lead, follow) for `measure`: speculative decoding with `draft` (a drafter that learns across requests
    replays `learned`, the state the run shown started from, in every timed run), and the target alone.
    `engine` is the specdec package (or a fake with the same Generation / generate)."""
    drafter = drafter_for_each_run(draft, learned)

    def lead() -> Timing:
        result = engine.generate(target, drafter(), prompt_ids, settings)
        return Timing(result.metrics.new_tokens, result.metrics.wall_time_s,
                      speculative_step_costs(result.events, settings.k, settings.max_new_tokens), result,
                      result.metrics.target_forwards)

    def follow(tokens: int) -> Timing:
        # ignore_eos: the target-only run goes on past its own end-of-text to match the speculative count
        result = engine.start(target, None, prompt_ids, replace(settings, max_new_tokens=max(1, tokens)),
                                   ignore_eos=True).result()
        return Timing(result.metrics.new_tokens, result.metrics.wall_time_s, baseline_step_costs(result.events),
                      result)

    return lead, follow


def measure_speedup(engine, target, draft, prompt_ids, settings, *, cache: Optional[dict] = None,
                    policy: Policy = INTERACTIVE, should_stop: Callable[[], bool] = lambda: False,
                    remember: Optional[Callable] = None, shown: Optional[ShownRun] = None,
                    learned=None) -> Iterator[Estimate]:
    """Speculative vs target-only for one configuration, through the per-configuration cache: a
    finished measurement is reused (the same figure everywhere), an unfinished one is continued.
    shown / learned: the run the figure is for and its drafter's learnt state (measure, engine_contestants)."""
    learned = learned if learned is not None or not getattr(draft, "learns_across_requests", False) \
        else draft.snapshot()
    key = config_key(target, draft, prompt_ids, settings, learned)
    cache = {} if cache is None else cache
    m = cache.get(key)
    if m is None:
        m = Measurement(key=key)
        (remember or _store)(cache, key, m)
    lead, follow = engine_contestants(engine, target, draft, prompt_ids, settings, learned)
    yield from measure(lead, follow, policy, measurement=m, should_stop=should_stop, shown=shown)


def _store(cache: dict, key, value) -> None:
    cache[key] = value


def cached(cache: dict, target, draft, prompt_ids, settings, learned=None) -> Optional[Measurement]:
    return cache.get(config_key(target, draft, prompt_ids, settings, learned))
