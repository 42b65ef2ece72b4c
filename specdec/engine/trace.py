"""Turning one step's tensors into a StepEvent (plain data) for renderers, the CLI and tests."""
from __future__ import annotations

from specdec.engine.events import DraftToken, FinalToken, TokenProb
from specdec.engine.verify import Verdict

import torch


def top_tokens(model, probs: torch.Tensor, n: int) -> list[list[TokenProb]]:
    """[rows, V] -> per row the n most probable tokens (n = 0: empty lists, no work)."""
    if n == 0 or probs.numel() == 0:
        return [[] for _ in range(probs.shape[0])]
    values, indices = torch.topk(probs, min(n, probs.shape[-1]), dim=-1)
    return [
        [TokenProb(i, model.token_text(i), v) for i, v in zip(row_ids, row_values)]
        for row_ids, row_values in zip(indices.tolist(), values.tolist())
    ]


def drafted_tokens(model, draft_ids: list[int], p: torch.Tensor, q: torch.Tensor, verdict: Verdict,
                   target_top: list[list[TokenProb]], top_n: int):
    k = len(draft_ids)
    if k == 0:
        return []
    ids = torch.tensor(draft_ids, device=p.device).unsqueeze(1)  # [k, 1]
    p_of, q_of = zip(*torch.cat((p[:k].gather(1, ids), q.gather(1, ids)), dim=1).tolist())  # one transfer
    draft_top = top_tokens(model, q, top_n)
    evaluated = min(verdict.num_accepted + 1, k)
    return [
        DraftToken(
            position=i,
            token_id=token,
            text=model.token_text(token),
            q=q_of[i],
            p=p_of[i],
            accept_prob=verdict.accept_probs[i],
            uniform=verdict.uniforms[i],
            accepted=i < verdict.num_accepted,
            evaluated=i < evaluated,
            target_top=target_top[i],
            draft_top=draft_top[i],
        )
        for i, token in enumerate(draft_ids)
    ]


def final_token(model, verdict: Verdict, p: torch.Tensor, target_top: list[TokenProb], kind: str, sampling: bool,
                top_n: int) -> FinalToken:
    n = verdict.num_accepted
    residual = None
    if sampling and verdict.next_kind == "resampled" and top_n:
        residual = top_tokens(model, verdict.next_distribution.unsqueeze(0), top_n)[0]
    return FinalToken(
        token_id=verdict.next_token,
        text=model.token_text(verdict.next_token),
        kind=kind,
        position=n,
        p=float(p[n, verdict.next_token]),
        target_top=target_top,
        residual_top=residual,
    )
