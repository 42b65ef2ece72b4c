"""Warping and drawing tokens: p and q go through transformers' own logits warpers,
in the order `generate` applies them (temperature, top-k, top-p)."""
from __future__ import annotations

from specdec.engine.events import DecodeSettings
from specdec.engine.schedules import SCHEDULES
from specdec.errors import InvalidSettingsError

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

_NO_INPUT_IDS = torch.empty((1, 0), dtype=torch.long)  # these warpers never read input_ids


def validate(settings: DecodeSettings) -> None:
    problems = []
    if settings.max_new_tokens < 1:
        problems.append(f"max_new_tokens must be at least 1 (got {settings.max_new_tokens})")
    if settings.k < 1:
        problems.append(f"K must be at least 1 (got {settings.k})")
    if not 0 <= settings.temperature < float("inf"):  # also refuses nan
        problems.append(f"temperature must be 0 (greedy) or a positive finite number (got {settings.temperature})")
    if settings.top_k is not None and settings.top_k < 0:
        problems.append(f"top-k must be 0 (off) or positive (got {settings.top_k})")
    if settings.top_p is not None and not 0 < settings.top_p <= 1:
        problems.append(f"top-p must be in (0, 1] (got {settings.top_p})")
    if settings.k_schedule not in SCHEDULES:
        problems.append(f"K schedule must be one of {', '.join(SCHEDULES)} (got {settings.k_schedule!r})")
    if problems:
        raise InvalidSettingsError("; ".join(problems))


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
