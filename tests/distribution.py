"""Exact laws and sampled counts for the distribution tests (chi-square against enumeration)."""
from __future__ import annotations

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from specdec import DecodeSettings, Generation


def reference_warpers(settings: DecodeSettings) -> LogitsProcessorList:
    """The warpers `generate` would build: temperature, then top-k, then top-p."""
    warpers = LogitsProcessorList([TemperatureLogitsWarper(settings.temperature)])
    if settings.top_k:
        warpers.append(TopKLogitsWarper(settings.top_k))
    if settings.top_p:
        warpers.append(TopPLogitsWarper(settings.top_p))
    return warpers


def exact_first_two(next_logits, settings: DecodeSettings, prompt: list[int], vocab: int) -> torch.Tensor:
    """[V, V] joint probability of (token 1, token 2) under the warped target."""
    warpers = reference_warpers(settings)
    warp = lambda logits: torch.softmax(warpers(None, logits.reshape(1, -1).double()), dim=-1)[0]
    first = warp(next_logits(prompt))
    return torch.stack([first[a] * warp(next_logits(prompt + [a])) for a in range(vocab)])


def speculative_counts(target, draft, settings: DecodeSettings, samples: int, prompt: list[int], vocab: int,
                       k: int = 3, **kwargs) -> torch.Tensor:
    """[V, V] counts of the first two generated tokens over `samples` runs from one seeded generator
    (K=3, 4 new tokens by default: acceptance, resampling and bonus paths all occur)."""
    settings = DecodeSettings(k=k, max_new_tokens=4, temperature=settings.temperature, top_k=settings.top_k,
                              top_p=settings.top_p, k_schedule=settings.k_schedule)
    generator = torch.Generator().manual_seed(0)
    counts = torch.zeros(vocab, vocab)
    for _ in range(samples):
        run = Generation(target, draft, prompt, settings, generator=generator, top_n=1, **kwargs)
        first, second = run.result().token_ids[:2]
        counts[first, second] += 1
    return counts
