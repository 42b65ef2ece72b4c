"""Held-out loss and perplexity."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


@torch.no_grad()
def heldout_loss(model: torch.nn.Module, windows: torch.Tensor, batch: int = 16) -> float:
    """Mean next-token cross-entropy (nats/token) over ``windows`` (rows of seq_len + 1 ids)."""
    model.eval()
    total, count = 0.0, 0
    for chunk in windows.split(batch):
        logits = model(input_ids=chunk[:, :-1], use_cache=False).logits.float()
        total += F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum").item()
        count += chunk[:, 1:].numel()
    return total / count


def loss_report(model: torch.nn.Module, windows_by_split: dict[str, torch.Tensor]) -> dict:
    report = {}
    for split, windows in windows_by_split.items():
        loss = heldout_loss(model, windows)
        report[split] = {"loss": round(loss, 4), "perplexity": round(math.exp(loss), 2),
                         "tokens": int(windows[:, 1:].numel())}
    return report
