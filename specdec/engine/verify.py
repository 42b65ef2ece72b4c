"""Verification: which drafted tokens the target keeps, and the token it adds.

Shapes: K drafted tokens; target rows p[0..K] where p[i] scores the position of draft token i
(p[K] is the bonus position); draft rows q[0..K-1].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from specdec.engine.tree import greedy_path, shown_nodes
from specdec.runners import native_kernels

import torch


@dataclass
class Verdict:
    num_accepted: int
    accept_probs: list[float]  # per drafted position: min(1, p/q) (greedy: 1.0 on a match, else 0.0)
    uniforms: list[Optional[float]]  # the draws compared with accept_probs (None: greedy / unchecked)
    next_token: int  # the resampled token at the first rejection, or the bonus token
    next_kind: str  # "resampled" | "bonus"
    next_distribution: Optional[torch.Tensor]  # [V] what next_token was drawn from (sampling only)


def greedy_choices(logits: torch.Tensor) -> list[int]:
    """The target's greedy token of each row of logits [rows, V]: the argmax, the first index among ties. On a CPU
    through the lab kernels' vector scan where they run (~8x torch's for 49,152 logits a row), else through
    max(dim), which finds the same index as argmax in ~60% of its time."""
    fast = native_kernels.softmax_first(logits, softmax=False)
    return (fast[0] if fast is not None else logits.max(dim=-1).indices).tolist()  # one transfer


def verify_greedy(draft_ids: list[int], target_logits: torch.Tensor) -> Verdict:
    """Accept the longest prefix where the target's argmax equals the draft token."""
    k = len(draft_ids)
    choice = greedy_choices(target_logits)  # K+1 target picks
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
    evaluated = n + 1 if n < k else k  # positions after the first rejection are never examined
    return Verdict(
        num_accepted=n,
        accept_probs=accept_probs.tolist(),
        uniforms=[u if i < evaluated else None for i, u in enumerate(uniforms.tolist())],
        next_token=next_token,
        next_kind="bonus" if n == k else "resampled",
        next_distribution=next_dist,
    )


def verify_tree_greedy(ids: list[int], parents: list[int], choices: list[int]) -> tuple[list[int], list[int], Verdict]:
    """Greedy verification of a tree: from the root, follow the child whose token is the target's choice
    (choices [N + 1]: the argmax of the root row, then of each node's row). Returns the path, the nodes compared
    (every child of the root and of a path node) and the Verdict of the chain the step shows (tree.shown_nodes:
    the path, then its last node's first child, rejected), as verify_greedy would give for that chain."""
    path = greedy_path(ids, parents, choices)
    evaluated = [i for i, parent in enumerate(parents) if parent < 0 or parent in path]
    rejected = len(shown_nodes(parents, path)) > len(path)
    n = len(path)
    verdict = Verdict(num_accepted=n, accept_probs=[1.0] * n + [0.0] * rejected, uniforms=[None] * (n + rejected),
                      next_token=choices[path[-1] + 1 if path else 0], next_kind="resampled" if rejected else "bonus",
                      next_distribution=None)
    return path, evaluated, verdict


def verify_tree_sampled(ids: list[int], parents: list[int], p: torch.Tensor, q_rows, generator
                        ) -> tuple[list[int], list[int], Verdict]:
    """Recursive rejection sampling over a sampled tree (SpecInfer's multi-candidate verification, with the
    siblings drawn without replacement as in Jeon et al. 2024; tree.py).

    ids, parents [N]: the nodes; p [N + 1, V]: the warped target rows (row 0 the root's, 1 + i node i's);
    q_rows(nodes) -> [n, V]: the draft distribution q a node's children were drawn from, in order, without
    replacement. From the root, a node's children are tried in the order drawn: child x is accepted with
    probability min(1, r(x) / q(x)), r starting as the node's p row and q as its draft row; after a rejection
    r becomes norm(max(0, r - q)) and q loses x (renormalised), which is the law the next sibling was drawn
    from. An accepted child becomes the node; when every child is rejected, or the node has none, the next
    token is drawn from r. Each rejection leaves exactly the residual law to the next candidate, so the
    output is distributed as the target's own samples.

    Returns the path, the nodes evaluated (accepted or rejected), and the Verdict of the chain the step shows
    (tree.shown_nodes: the path, then the first child evaluated at its end); a path node's accept_prob there
    reads r and q as its earlier siblings left them, not p and its q row.
    """
    children: dict[int, list[int]] = {}
    for node, parent in enumerate(parents):
        children.setdefault(parent, []).append(node)
    node, path, evaluated = -1, [], {}  # evaluated: node -> (accept_prob, uniform)
    while True:
        r, kids = p[node + 1], children.get(node, [])  # r: [V] what the next token must follow
        q = q_rows(kids[:1])[0] if kids else None  # [V] what the next child was drawn from
        chosen = None
        for child in kids:
            token = ids[child]
            accept = min(1.0, float(r[token] / q[token]))  # q > 0: the child was drawn from q
            uniform = float(torch.rand(1, generator=generator, device=p.device))
            evaluated[child] = (accept, uniform)
            if uniform < accept:
                chosen = child
                break
            residual = (r - q).clamp(min=0)
            total = residual.sum()
            r = residual / total if total > 0 else r  # total == 0 only when r == q (rejection impossible)
            q = q.clone()
            q[token] = 0.0
            q = q / q.sum() if q.sum() > 0 else q  # sum 0: no sibling is left to try
        if chosen is None:
            break
        path.append(chosen)
        node = chosen
    next_token = int(torch.multinomial(r, 1, generator=generator))
    shown = shown_nodes(parents, path)
    verdict = Verdict(num_accepted=len(path), accept_probs=[evaluated[n][0] for n in shown],
                      uniforms=[evaluated[n][1] for n in shown], next_token=next_token,
                      next_kind="resampled" if children.get(node) else "bonus", next_distribution=r)
    return path, list(evaluated), verdict


SampledVerifier = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Optional[torch.Generator]], Verdict]
GreedyVerifier = Callable[[list, torch.Tensor], Verdict]  # (draft ids [k], raw target logits [k + 1, V])
