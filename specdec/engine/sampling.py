"""Warping and drawing tokens: p and q go through transformers' own logits warpers,
in the order `generate` applies them (temperature, top-k, top-p)."""
from __future__ import annotations

from specdec.engine.events import DecodeSettings

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


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """One draw from a [V] distribution."""
    return int(torch.multinomial(probs, 1, generator=generator))
