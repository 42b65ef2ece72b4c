"""Is it exact? Speculative decoding against the target alone, on one prompt and its settings.

compare_greedy   both decoders at temperature 0, token by token: identical, or the first difference
                 with its likely cause.
check_sampling   N draws of the first one or two generated tokens from the speculative engine (with
                 the chosen verifier: the real one, or a broken one from verifier_faults.py) and N from
                 the target alone with the same warping; both against the target's exact probabilities:
                 chi-square p-value and total-variation distance (first_tokens.py makes draws cheap).
Both are generators that yield Progress and return a plain result (no tensors).
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Optional

from specdec.engine.events import DecodeSettings
from specdec.errors import InvalidSettingsError
from specdec.exactness.chi_square import chi_square_p_value, total_variation
from specdec.exactness.first_tokens import OTHER, FirstTokens, TargetLaw
from specdec.exactness.verifier_faults import REAL, choose_verifier
from specdec.models.dtypes import dtype_name
from specdec.planning.run import start

import torch

P_THRESHOLD = 1e-3
THRESHOLD_MEANING = ("p ≥ 0.001 passes: an exact engine passes 999 times in 1,000, so p < 0.001 means the "
                     "speculative tokens do not follow the target's distribution.")
SAMPLING_TEMPERATURE = 1.0  # used when the settings are greedy
SHOWN_OUTCOMES = 12
NEAR_TIE = 1e-3  # gap between the target's top two probabilities under which rounding can flip the argmax
CHUNK = 500  # draws per side between progress reports (and Stop checks)


@dataclass
class Progress:
    stage: str  # "greedy" | "exact law" | "draws"
    done: int
    total: int

    def describe(self) -> str:
        what = {"greedy": "greedy tokens generated (both decoders)",
                "exact law": "target forwards for the exact probabilities", "draws": "draws per side"}[self.stage]
        return f"{self.done:,} of {self.total:,} {what}"


@dataclass
class GreedyCheck:
    speculative: list[str]  # token texts
    target_only: list[str]
    speculative_ids: list[int]
    target_ids: list[int]
    first_difference: Optional[int]  # index into the generated tokens; None when identical
    cause: str  # one sentence: why they agree, or the likely reason they differ
    dtype: str
    stopped: bool = False
    verifier: str = REAL  # the verifier the speculative side ran (a broken one's greedy form, or the real rule)
    rule: str = ""  # one sentence on which rule the greedy side ran and why, when a broken verifier was chosen

    @property
    def identical(self) -> bool:
        return self.first_difference is None


@dataclass
class OutcomeBar:
    tokens: list[str]  # the outcome's token texts ([] for the pooled rest)
    label: str
    exact: float  # the target's probability of the outcome
    speculative: int  # draws that gave it
    target_only: int


@dataclass
class SamplingCheck:
    verifier: str
    verifier_explanation: str
    tokens: int  # generated tokens per draw (1 or 2)
    requested: int
    draws: int  # per side
    temperature: float
    top_k: Optional[int]
    top_p: Optional[float]
    drafted: Optional[list[str]]  # the first step's drafted tokens; None: a sampling drafter, new ones every draw
    bars: list[OutcomeBar]
    cells: int  # outcomes counted separately, plus one pooled cell
    p_value: float  # speculative draws against the exact probabilities
    tv: float
    target_only_p_value: float  # the target-alone draws, the same way: what an exact sampler gives
    target_only_tv: float
    threshold: float = P_THRESHOLD
    threshold_meaning: str = THRESHOLD_MEANING
    stopped: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.p_value >= self.threshold

    @property
    def verdict(self) -> str:
        if self.passed:
            return (f"Exact as far as {self.draws:,} draws can tell: p = {self.p_value:.3g} ≥ {self.threshold:g} "
                    f"(total variation {self.tv:.4f}; the target alone: p = {self.target_only_p_value:.3g}, "
                    f"{self.target_only_tv:.4f}).")
        return (f"Not exact: p = {self.p_value:.3g} < {self.threshold:g} (total variation {self.tv:.4f}, against "
                f"{self.target_only_tv:.4f} for the target alone): the speculative tokens do not follow the "
                f"target's distribution.")


# --- greedy ------------------------------------------------------------------------------------

def compare_greedy(target, drafter, prompt_ids: list[int], settings: DecodeSettings,
                   should_stop: Callable[[], bool] = lambda: False, verifier: str = REAL) -> Iterator[Progress]:
    """Generator: both greedy runs with the settings' K, schedule and max new tokens, the speculative one under
    `verifier`'s greedy form (a broken verifier that has one breaks greedy output too: that is its lesson; one that
    has none runs the real greedy rule, and the check says so); returns a GreedyCheck."""
    greedy, choice = replace(settings, temperature=0.0), choose_verifier(verifier)
    runs = [start(target, drafter, prompt_ids, greedy, top_n=2, greedy_verifier=choice.greedy),
            start(target, None, prompt_ids, greedy, top_n=2)]
    stopped = False
    for run in runs:
        if stopped:
            break
        for _ in run:
            if should_stop():
                stopped = True
                break
            yield Progress("greedy", len(runs[0].token_ids) + len(runs[1].token_ids), 2 * greedy.max_new_tokens)
        run.close()
    spec, alone = runs[0].token_ids, runs[1].token_ids
    first = next((i for i, (a, b) in enumerate(zip(spec, alone)) if a != b), None)
    if first is None and len(spec) != len(alone) and not stopped:
        first = min(len(spec), len(alone))
    dtype = dtype_name(getattr(target, "dtype", "")) or "unknown"
    if choice.greedy is None:
        cause = explain_difference(first, runs[1].events, dtype, len(spec), guaranteed=choice.name == REAL)
    elif first is not None:
        cause = (f"The verifier keeps drafted tokens that are not the target's argmax ({choice.name}): greedy output "
                 "is no longer the target's, as the broken rule predicts.")
    else:
        cause = (f"Identical here although the verifier keeps every drafted token ({choice.name}): every token the "
                 "drafter proposed was the target's argmax. A weaker drafter or a larger K shows the break.")
    return GreedyCheck([target.token_text(t) for t in spec], [target.token_text(t) for t in alone], spec, alone, first,
                       cause, dtype, stopped, choice.name, greedy_rule(choice))


def greedy_rule(choice) -> str:
    """Which rule the greedy comparison ran, in plain words, for a broken verifier ("" for the real one)."""
    if choice.name == REAL:
        return ""
    if choice.greedy is not None:
        return (f"Greedy, too, ran with '{choice.name}': at temperature 0 it keeps every drafted token, so the "
                "output follows the drafter wherever it differs from the target's argmax.")
    return (f"'{choice.name}' changes only how a sampled draft is accepted or corrected; at temperature 0 a drafted "
            "token is kept exactly when it is the target's argmax, so the greedy check ran the real rule. The sampling "
            "test below is the one that tests this fault.")


def explain_difference(first: Optional[int], alone_events, dtype: str, compared: int, guaranteed: bool = True) -> str:
    """One sentence: why the two runs agree (the guarantee, or, under a fault of sampling alone, the real greedy rule
    it left in place), or the likely reason for their first difference."""
    if first is None:
        return (f"Identical: all {compared} tokens match, as greedy speculative decoding guarantees." if guaranteed else
                f"Identical: all {compared} tokens match, because the greedy side ran the real rule.")
    gap = top_two_gap(alone_events, first)
    tie = f"the target's top two tokens there differ by {gap:.2g} in probability" if gap is not None else ""
    if dtype != "float32":
        return (f"Likely reduced-precision numerics: in {dtype} a forward over K+1 tokens rounds differently from "
                f"a one-token forward, so a near-tie can flip ({tie or 'see the probabilities'}). Run in float32 "
                f"to compare exactly.")
    if gap is not None and gap < NEAR_TIE:
        return (f"A near-tie: {tie}, so even float32 rounding (K+1 tokens in one forward against one at a time) "
                f"can flip it.")
    return f"Not explained by rounding ({tie or 'no near-tie'}): in float32 this points to a bug."


def top_two_gap(events, index: int) -> Optional[float]:
    """p(top 1) - p(top 2) of the target-alone run at generated token `index` (one token per event)."""
    if index >= len(events) or events[index].final is None or len(events[index].final.target_top) < 2:
        return None
    top = events[index].final.target_top
    return top[0].prob - top[1].prob


# --- sampling ----------------------------------------------------------------------------------

def ensure_sampling(settings: DecodeSettings) -> tuple[DecodeSettings, list[str]]:
    if settings.temperature > 0:
        return settings, []
    return (replace(settings, temperature=SAMPLING_TEMPERATURE),
            [f"The temperature is 0 (greedy); the sampling check uses T = {SAMPLING_TEMPERATURE:g}."])


def check_sampling(target, drafter, prompt_ids: list[int], settings: DecodeSettings, *, draws: int,
                   tokens: int = 1, verifier: str = REAL,
                   should_stop: Callable[[], bool] = lambda: False) -> Iterator[Progress]:
    """Generator: Progress while preparing and drawing; returns a SamplingCheck (None if stopped before
    any draw). Both sides use the settings' seed."""
    started = time.perf_counter()
    settings, notes = ensure_sampling(settings)
    choice = choose_verifier(verifier)
    if draws < 1:
        raise ValueError(f"draws must be at least 1 (got {draws})")
    if getattr(drafter, "greedy_only", False):
        raise InvalidSettingsError(f"{drafter.name} drafts for greedy decoding only, so it has no sampling check: "
                                   f"the greedy comparison is its test")
    if getattr(drafter, "tree_shape", None) is not None:
        raise InvalidSettingsError(f"{drafter.name} drafts trees, which this check cannot replay (it draws chain steps); "
                                   "tests/engine/test_tree_sampling.py checks sampled tree steps with a chi-square test. Check "
                                   "the same head drafting chains instead (for the zoo's trees: smollm2-135m-eagle)")
    gen = start(target, drafter, prompt_ids, settings, sampled_verifier=choice.verifier, top_n=0)
    first = FirstTokens(gen, tokens)
    law = yield from as_progress("exact law", first.build_law(draws, should_stop))
    if law is None:
        return None
    spec, alone = Tally(), Tally()
    alone_generator = torch.Generator(device=gen.generator.device).manual_seed(gen.generator.initial_seed())
    done = 0
    while done < draws and not should_stop():
        n = min(CHUNK, draws - done)
        spec.add(first.draw() for _ in range(n))
        alone.add(law.sample(n, alone_generator, first.cells))
        done += n
        yield Progress("draws", done, draws)
    notes += note_drafts(first)
    return exactness_report(first, law, choice, settings, spec, alone, done, draws, notes, time.perf_counter() - started)


def as_progress(stage: str, steps):
    """`yield from` a generator of (done, total) pairs, as Progress; returns its return value."""
    while True:
        try:
            done, total = next(steps)
        except StopIteration as stop:
            return stop.value
        yield Progress(stage, done, total)


@dataclass
class Tally:
    """One side's draws: how often each cell (or OTHER) came out, and the first tokens of OTHER draws."""

    keys: Counter = field(default_factory=Counter)
    other_heads: Counter = field(default_factory=Counter)

    def add(self, draws) -> None:
        for key, head in draws:
            self.keys[key] += 1
            if key == OTHER and head is not None:
                self.other_heads[head] += 1


def note_drafts(first: FirstTokens) -> list[str]:
    drafts = first.first_draft()
    if drafts == []:
        return ["The drafter proposed nothing for this prompt: the first token comes from a plain target step, "
                "so no verifier is involved (try another prompt or drafter)."]
    k = first.draft_count(())
    notes = [f"The first step drafts up to {k} token{'s' * (k != 1)} (the least of K, max new tokens − 1 and the "
             f"tokens per draw): drafts after the n-th cannot change the first n tokens."]
    if drafts is None:
        notes.append("The drafter samples its proposal, so it proposes afresh for every draw (slower than a "
                     "deterministic drafter such as prompt lookup).")
    return notes


def exactness_report(first: FirstTokens, law: TargetLaw, choice, settings: DecodeSettings, spec: Tally, alone: Tally,
              done: int, requested: int, notes: list[str], seconds: float) -> SamplingCheck:
    cells = first.cells
    outcomes = list(cells) + [OTHER]
    probs = torch.tensor([cells[o] for o in cells] + [max(0.0, 1.0 - sum(cells.values()))], dtype=torch.float64)
    spec_counts, alone_counts = (torch.tensor([float(tally.keys[o]) for o in outcomes]) for tally in (spec, alone))
    drafts = first.first_draft()
    text = first.gen.target.token_text
    return SamplingCheck(
        verifier=choice.name, verifier_explanation=choice.explanation, tokens=first.tokens, requested=requested,
        draws=done, temperature=settings.temperature, top_k=settings.top_k, top_p=settings.top_p,
        drafted=None if drafts is None else [text(t) for t in drafts],
        bars=outcome_bars(law, cells, spec, alone, done, drafts or [], text), cells=len(outcomes),
        p_value=chi_square_p_value(spec_counts, probs), tv=total_variation(spec_counts, probs),
        target_only_p_value=chi_square_p_value(alone_counts, probs),
        target_only_tv=total_variation(alone_counts, probs), stopped=done < requested, seconds=seconds, notes=notes)


def outcome_bars(law: TargetLaw, cells: dict, spec: Tally, alone: Tally, draws: int, drafts: list[int],
                 text) -> list[OutcomeBar]:
    """The most likely (or most drawn) cells; the first drafted token when it is not a cell (where a broken
    verifier piles up its draws); then everything else, pooled."""
    bars = [OutcomeBar([text(t) for t in o], describe_outcome(o, text), p, spec.keys[o], alone.keys[o])
            for o, p in cells.items()]
    bars.sort(key=lambda b: -max(b.exact, b.speculative / max(draws, 1), b.target_only / max(draws, 1)))
    bars = bars[:SHOWN_OUTCOMES]
    if drafts and drafts[0] not in law.heads:
        d = drafts[0]
        name = describe_outcome((d,), text) + (" …" if law.tokens > 1 else "")  # "…": then any token
        bars.append(OutcomeBar([text(d)], name, float(law.first[d]), spec.other_heads[d], alone.other_heads[d]))
    rest = OutcomeBar([], "all other outcomes", max(0.0, 1.0 - sum(b.exact for b in bars)),
                      draws - sum(b.speculative for b in bars), draws - sum(b.target_only for b in bars))
    return bars + [rest]


def describe_outcome(outcome: tuple, text) -> str:
    return " | ".join(repr(text(t))[1:-1] for t in outcome)
