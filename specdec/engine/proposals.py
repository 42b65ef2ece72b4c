"""The engine's side of the drafter interface (drafters/base.py describes the whole protocol): what a step hands
a drafter (ProposalContext), what it gets back (Proposal), and what the target's runner keeps for the drafter
(hidden_request). The engine calls drafters through these alone, so it needs nothing from specdec/drafters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch


@dataclass
class ProposalContext:
    sampling: bool  # False: greedy; q rows are then softmax(raw logits), for the inspector only
    warpers: object  # transformers LogitsProcessorList, the same warping p gets
    generator: Optional[torch.Generator]
    stop_below: Optional[float] = None  # confidence schedule: stop once the top draft probability < this

    def unsure(self, q_row: torch.Tensor) -> bool:
        """The confidence schedule's stop rule: this draft row's top probability is below stop_below, so the
        drafter stops here and lets the target take over. q_row: [V] (or [1, V])."""
        return self.stop_below is not None and float(q_row.max()) < self.stop_below


@dataclass
class Proposal:
    ids: list[int] = field(default_factory=list)
    q: Optional[torch.Tensor] = None  # [len(ids), V] float32 probabilities (None when ids is empty)

    def __len__(self) -> int:
        return len(self.ids)


def hidden_request(drafter) -> bool | tuple[int, ...]:
    """What the target's runner keeps for `drafter` (its keep_hidden, backend.py): nothing (False), the
    final-norm states (True) or the outputs of the drafter's target_layers."""
    if drafter is None or not drafter.reads_target_hidden:
        return False
    return tuple(drafter.target_layers) or True
