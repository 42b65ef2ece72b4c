"""Warping and drawing tokens: p and q go through transformers' own logits warpers,
in the order `generate` applies them (temperature, top-k, top-p)."""
from __future__ import annotations

from specdec.engine.events import DecodeSettings
from specdec.runners import native_kernels

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

_NO_INPUT_IDS = torch.empty((1, 0), dtype=torch.long)  # these warpers never read input_ids


def build_warpers(settings: DecodeSettings) -> LogitsProcessorList:
    warpers = LogitsProcessorList()
    if settings.temperature not in (0, 1):
        warpers.append(TemperatureLogitsWarper(settings.temperature))
    if settings.top_k:
        warpers.append(TopKLogitsWarper(settings.top_k))
    if settings.top_p is not None and settings.top_p < 1:
        warpers.append(TopPLogitsWarper(settings.top_p))
    return warpers


def probabilities(logits: torch.Tensor, warpers: LogitsProcessorList) -> torch.Tensor:
    """[n, V] raw logits -> [n, V] warped probabilities (float32)."""
    scores = logits
    for warper in warpers:  # called one by one: LogitsProcessorList re-inspects signatures per call
        scores = warper(_NO_INPUT_IDS, scores)
    return torch.softmax(scores.float(), dim=-1)


def greedy_probabilities(logits: torch.Tensor, threads: int = 1) -> torch.Tensor:
    """[n, V] raw logits -> their softmax (greedy p, what a greedy step's events show): in one pass of the lab
    kernels on `threads` threads where they run (a CPU's float32 rows, ~3.5x torch's softmax for 5 rows of 49,152
    on 2 threads), else torch's; the two agree within a few units in the last place."""
    fast = native_kernels.softmax_first(logits, threads=threads)
    return fast[1] if fast is not None else torch.softmax(logits.float(), dim=-1)


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """One draw from a [V] distribution."""
    return int(torch.multinomial(probs, 1, generator=generator))
