"""Verification: which drafted tokens the target keeps, and the token it adds.

Shapes: K drafted tokens; target rows p[0..K] where p[i] scores the position of draft token i
(p[K] is the bonus position); draft rows q[0..K-1].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch


@dataclass
class Verdict:
    num_accepted: int
    accept_probs: list[float]  # per drafted position: min(1, p/q) (greedy: 1.0 on a match, else 0.0)
    uniforms: list[Optional[float]]  # the draws compared with accept_probs (None: greedy / unchecked)
    next_token: int  # correction at the first rejection, or the bonus token
    next_kind: str  # "resampled" | "bonus"
    next_distribution: Optional[torch.Tensor]  # [V] what next_token was drawn from (sampling only)


def verify_greedy(draft_ids: list[int], target_logits: torch.Tensor) -> Verdict:
    """Accept the longest prefix where the target's argmax equals the draft token."""
    k = len(draft_ids)
    choice = target_logits.argmax(dim=-1).tolist()  # K+1 target picks, one transfer
    n = next((i for i in range(k) if choice[i] != draft_ids[i]), k)
    return Verdict(
        num_accepted=n,
        accept_probs=[1.0 if choice[i] == draft_ids[i] else 0.0 for i in range(k)],
        uniforms=[None] * k,
        next_token=choice[n],
        next_kind="bonus" if n == k else "resampled",
        next_distribution=None,
    )


def verify_sampled(draft_ids: torch.Tensor, p: torch.Tensor, q: torch.Tensor, generator) -> Verdict:
    """Modified rejection sampling (Leviathan et al. 2023, Chen et al. 2023).

    Accept d_i with probability min(1, p_i(d_i) / q_i(d_i)); at the first rejection draw from
    norm(max(0, p_i - q_i)); if all K are accepted draw the bonus token from p_K.
    The output is distributed exactly as the target's own samples.
    """
    k = draft_ids.numel()
    rows = torch.arange(k, device=p.device)
    accept_probs = (p[rows, draft_ids] / q[rows, draft_ids]).clamp(max=1.0)  # q(d_i) > 0: d_i ~ q_i
    uniforms = torch.rand(k, generator=generator, device=p.device)
    accepted = uniforms < accept_probs
    n = int(accepted.cumprod(dim=0).sum())
    if n < k:
        residual = (p[n] - q[n]).clamp(min=0)
        total = residual.sum()
        # total == 0 only when p_n == q_n, where rejection has probability 0; guard rounding anyway
        next_dist = residual / total if total > 0 else p[n]
    else:
        next_dist = p[k]
    next_token = int(torch.multinomial(next_dist, 1, generator=generator))
    checked = n + 1 if n < k else k  # positions after the first rejection are never examined
    return Verdict(
        num_accepted=n,
        accept_probs=accept_probs.tolist(),
        uniforms=[u if i < checked else None for i, u in enumerate(uniforms.tolist())],
        next_token=next_token,
        next_kind="bonus" if n == k else "resampled",
        next_distribution=next_dist,
    )


SampledVerifier = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Optional[torch.Generator]], Verdict]
