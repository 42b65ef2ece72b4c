"""Exact laws and sampled counts for the distribution tests (chi-square against enumeration).

Three shapes of test use these helpers:
  - the first two tokens of many short runs (exact_first_two / speculative_counts);
  - the whole output of many short runs, EOS included (exact_output_law / sampled_outputs /
    output_p_value): every sequence the target can produce, with its probability;
  - every token of one long run (long_run / transition_counts / exact_transitions /
    transition_p_value): for an order-2 TableModel each token is drawn from the warped row of the
    two tokens before it, so the counts per context are multinomial and their chi-squares add up
    (Anderson & Goodman 1957). Cheap per token, and every path (accepted draft, resampled, bonus,
    plain target step) contributes thousands of tokens.
The reference warping is written out here (transformers' warpers in `generate`'s order), never taken
from the engine; tests/engine/test_warpers.py pins that order to what `generate` itself does.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable

from specdec import DecodeSettings, start

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from tests.stats import MIN_EXPECTED, chi_square_p_value

# The warping cases every sampling path is tested at. Values are chosen on TableModel.random(V=6,
# seed=0) so that the wrong orders (top-p before top-k, temperature after top-p) change the law in
# many contexts (tests/engine/test_warpers.py guards that).
WARPING_CASES = {
    "temperature 0.7, top-k 3": DecodeSettings(temperature=0.7, top_k=3),
    "temperature 1.5, top-p 0.8": DecodeSettings(temperature=1.5, top_p=0.8),
    "top-k 3, top-p 0.7": DecodeSettings(temperature=1.0, top_k=3, top_p=0.7),
    "temperature 1.5, top-k 4, top-p 0.8": DecodeSettings(temperature=1.5, top_k=4, top_p=0.8),
}


def reference_warpers(settings: DecodeSettings) -> LogitsProcessorList:
    """The warpers `generate` would build: temperature, then top-k, then top-p."""
    warpers = LogitsProcessorList([TemperatureLogitsWarper(settings.temperature)])
    if settings.top_k:
        warpers.append(TopKLogitsWarper(settings.top_k))
    if settings.top_p:
        warpers.append(TopPLogitsWarper(settings.top_p))
    return warpers


def warped_law(settings: DecodeSettings) -> Callable[[torch.Tensor], torch.Tensor]:
    """raw logits [..., V] -> the target's warped probabilities (float64), as `generate` samples them."""
    warpers = reference_warpers(settings)

    def law(logits: torch.Tensor) -> torch.Tensor:
        flat = logits.reshape(-1, logits.shape[-1]).double()
        return torch.softmax(warpers(None, flat), dim=-1).reshape(logits.shape)

    return law


# --- the first two tokens of short runs --------------------------------------------------------

def exact_first_two(next_logits, settings: DecodeSettings, prompt: list[int], vocab: int) -> torch.Tensor:
    """[V, V] joint probability of (token 1, token 2) under the warped target."""
    warp = warped_law(settings)
    first = warp(next_logits(prompt))
    return torch.stack([first[a] * warp(next_logits(prompt + [a])) for a in range(vocab)])


def speculative_counts(target, draft, settings: DecodeSettings, samples: int, prompt: list[int], vocab: int,
                       k: int = 3, **kwargs) -> torch.Tensor:
    """[V, V] counts of the first two generated tokens over `samples` runs from one seeded generator
    (K=3, 4 new tokens by default: acceptance, resampling and bonus paths all occur). Each run stops at the
    step that emits its second token: the tokens after it never reach the counts, and the steps that would
    make them draw after every draw the first two depend on."""
    settings = replace(settings, k=k, max_new_tokens=4)
    generator = torch.Generator().manual_seed(0)
    counts = torch.zeros(vocab, vocab)
    for _ in range(samples):
        first, second = run_tokens(target, draft, prompt, settings, generator, stop_at=2, **kwargs)[:2]
        counts[first, second] += 1
    return counts


def run_tokens(target, draft, prompt: list[int], settings: DecodeSettings, generator, stop_at: int | None = None,
               **kwargs) -> list[int]:
    """The tokens of one run (no top-n tracing: the draws are the same, the run is twice as fast); with
    stop_at, the run is stopped (as Stop stops it) after the step that brings it to stop_at tokens."""
    run = start(target, draft, prompt, settings, generator=generator, top_n=0, **kwargs)
    for _ in run:
        if stop_at is not None and len(run.token_ids) >= stop_at:
            run.close()
            break
    return run.token_ids


# --- the whole output of short runs ------------------------------------------------------------

def exact_output_law(next_logits, settings: DecodeSettings, prompt: list[int], vocab: int, length: int,
                     eos_ids: tuple[int, ...] = ()) -> dict[tuple[int, ...], float]:
    """Probability of every output of a run with max_new_tokens = length: sequences of `length`
    tokens, or shorter ones that end at their first EOS."""
    warp = warped_law(settings)
    law: dict[tuple[int, ...], float] = {}
    frontier = [((), 1.0)]
    while frontier:
        prefix, prob = frontier.pop()
        if prob == 0:
            continue
        if len(prefix) == length or (prefix and prefix[-1] in eos_ids):
            law[prefix] = prob
            continue
        row = warp(next_logits(prompt + list(prefix)))
        frontier += [(prefix + (token,), prob * float(row[token])) for token in range(vocab)]
    return law


def sampled_outputs(target, draft, settings: DecodeSettings, samples: int, prompt: list[int], seed: int,
                    **kwargs) -> Counter:
    """How often each whole output occurred in `samples` runs drawn from one seeded generator."""
    generator = torch.Generator().manual_seed(seed)
    return Counter(tuple(run_tokens(target, draft, prompt, settings, generator, **kwargs)) for _ in range(samples))


def output_p_value(counts: Counter, law: dict[tuple[int, ...], float]) -> float:
    """Chi-square p-value of sampled outputs against their exact law; an output the law gives
    probability 0 fails outright."""
    impossible = {output: n for output, n in counts.items() if law.get(output, 0.0) == 0}
    assert not impossible, f"outputs the target can never produce were produced: {dict(list(impossible.items())[:5])}"
    outputs = sorted(law)
    observed = torch.tensor([float(counts.get(o, 0)) for o in outputs])
    return chi_square_p_value(observed, torch.tensor([law[o] for o in outputs], dtype=torch.float64))


# --- every token of one long run ---------------------------------------------------------------

def long_run(target, draft, settings: DecodeSettings, tokens: int, prompt: list[int], seed: int, **kwargs):
    """(token ids, events) of one seeded run of `tokens` new tokens."""
    run = start(target, draft, prompt, replace(settings, max_new_tokens=tokens),
                     generator=torch.Generator().manual_seed(seed), top_n=0, **kwargs)
    events = list(run)
    return run.token_ids, events


def transition_counts(prompt: list[int], tokens: list[int], vocab: int) -> torch.Tensor:
    """[V, V, V] counts[a, b, c]: how often generated token c followed the two tokens (a, b)."""
    seq = list(prompt) + list(tokens)
    counts = torch.zeros(vocab, vocab, vocab)
    for i in range(len(prompt), len(seq)):
        counts[seq[i - 2], seq[i - 1], seq[i]] += 1
    return counts


def exact_transitions(table_model, settings: DecodeSettings) -> torch.Tensor:
    """[V, V, V] law[a, b, c]: probability that the warped target emits c after (a, b)."""
    return warped_law(settings)(table_model.table)


def transition_p_value(counts: torch.Tensor, law: torch.Tensor) -> float:
    """Chi-square of next-token counts per context against the law per context; the statistics and
    degrees of freedom of the contexts add up. Cells expected fewer than 5 times are pooled within
    their context. A token the law gives probability 0 in its context fails outright."""
    counts = counts.reshape(-1, counts.shape[-1]).double()
    law = law.reshape(-1, law.shape[-1]).double()
    impossible = counts[law == 0].sum()
    assert impossible == 0, f"{int(impossible)} tokens the warped target can never emit in their context were emitted"
    statistic, df = torch.zeros((), dtype=torch.float64), 0
    for observed_row, law_row in zip(counts, law):
        n = observed_row.sum()
        if n == 0:
            continue
        possible = law_row > 0
        observed, expected = observed_row[possible], law_row[possible] * n
        small = expected < MIN_EXPECTED
        if small.any():
            observed = torch.cat([observed[~small], observed[small].sum().reshape(1)])
            expected = torch.cat([expected[~small], expected[small].sum().reshape(1)])
        statistic += ((observed - expected) ** 2 / expected).sum()
        df += observed.numel() - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), statistic / 2))


# --- how the tokens of a run were produced -----------------------------------------------------

def token_paths(events) -> Counter:
    """Emitted tokens by how they were produced: "accepted" drafts, and the target's own "resampled"
    (after a rejection), "bonus" and "target" (plain step) tokens."""
    paths: Counter = Counter()
    for event in events:
        paths["accepted"] += min(event.num_accepted, len(event.emitted_ids))
        if event.final is not None:
            paths[event.final.kind] += 1
    return paths


def short_run_paths(target, draft, settings: DecodeSettings, samples: int, prompt: list[int], seed: int) -> Counter:
    """token_paths summed over short runs (guards that a short-run test reaches every path)."""
    generator = torch.Generator().manual_seed(seed)
    paths: Counter = Counter()
    for _ in range(samples):
        paths.update(token_paths(list(start(target, draft, prompt, settings, generator=generator, top_n=0))))
    return paths
