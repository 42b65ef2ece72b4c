"""Tree drafts (SpecInfer; EAGLE-2's dynamic tree): a drafter proposes several continuations at once as
a tree of tokens, the target scores every node in one forward, and verification walks the tree.

Vocabulary, added to drafters/base.py's and fixed here:
  root   the last emitted token seq[-1], which the target is fed first (the chain's first row)
  node   one drafted token of the tree; nodes are numbered so that a parent precedes its children; siblings
         come best-first in a greedy tree and in the order they were drawn in a sampled one
  path   the nodes the verifier kept, root-first (their tokens are the step's accepted tokens): greedy, each
         node's token is the target's choice after its parent; sampling, each was accepted by
         verify.verify_tree_sampled
  shown  the chain a step reports (events, UI, metrics): the path, then the first child of the path's last
         node when it has one (the rejected token); a tree step is traced like a chain step along it

Shapes: N nodes; the target is fed N + 1 tokens, root first; its logits rows [N + 1, V]: row 0 scores the
root's children, row 1 + i the children of node i.
Greedy trees keep a node's likeliest children (EAGLE-2). Sampled trees draw a node's children from its
draft distribution q without replacement (no sibling repeats another), as many as decided before drawing,
and never drop one for its value: recursive rejection sampling (verify.verify_tree_sampled) is exact only
over such draws.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from specdec.runners.tree_attention import depths

import torch

MAX_TREE_DEPTH = 12  # a tree drafter drafts at most this many levels, whatever K asks (its cache room)


@dataclass(frozen=True)
class TreeShape:
    """How big a dynamic tree grows (EAGLE-2): its depth is the step's K."""

    top: int = 3  # children drafted per expanded node (its likeliest tokens; sampling: draws without replacement)
    beam: int = 3  # nodes expanded per level (the likeliest by cumulative draft probability)
    nodes: int = 8  # nodes kept for verification (the likeliest of all drafted; sampling: the budget drawn)

    def __post_init__(self):
        if min(self.top, self.beam, self.nodes) < 1:
            raise ValueError(f"tree shape needs top, beam and nodes >= 1, not {self}")


@dataclass
class TreeProposal:
    ids: list[int]  # [N] the token of each node
    parents: list[int]  # [N] the index of each node's parent node, -1 for the root
    q_rows: Callable[[list[int]], torch.Tensor]  # node indices -> [n, V] the distribution each was drawn from

    def __len__(self) -> int:
        return len(self.ids)


class GrowingTree:
    """A dynamic tree while a drafter grows it level by level (EAGLE-2). Candidates are numbered in the order
    they are drafted; a candidate's score is its cumulative draft log-probability."""

    def __init__(self):
        self.ids: list[int] = []
        self.parents: list[int] = []
        self.scores: list[float] = []
        self.parent_row: list[int] = []  # the row of its parent in the level that drafted it
        self.logp_rows: list[torch.Tensor] = []  # greedy: [Vd] log-probs of each expanded node's children, root first
        self.prob_rows: list[torch.Tensor] = []  # sampled: [V] the distribution each expanded node's children were drawn from
        self.drawn_from: list[int] = []  # index into logp_rows (or prob_rows) of each candidate's distribution
        self.slot_of: dict[int, int] = {}  # expanded candidate -> its drafter-cache slot

    def add_children(self, level: list[int], logp: torch.Tensor, vocab: torch.Tensor, top: int) -> list[int]:
        """Each node of `level` (-1: the root) gets its `top` likeliest children. logp: [len(level), Vd]
        log-probs over the draft vocabulary, whose ids are vocab [Vd]. Returns the new candidates."""
        best = logp.topk(min(top, logp.shape[-1]), dim=-1)  # [b, top]
        children = []
        for row, parent in enumerate(level):
            self.logp_rows.append(logp[row])
            base = self.scores[parent] if parent >= 0 else 0.0
            for value, column in zip(best.values[row].tolist(), best.indices[row].tolist()):
                children.append(len(self.ids))
                self.ids.append(int(vocab[column]))
                self.parents.append(parent)
                self.scores.append(base + value)
                self.parent_row.append(row)
                self.drawn_from.append(len(self.logp_rows) - 1)
        return children

    def add_draws(self, level: list[int], probs: torch.Tensor, top: int, room: int, generator) -> list[int]:
        """The nodes of `level`, in order, each get min(top, room left, the tokens q allows) children drawn
        without replacement from their row of probs [len(level), V], in the order drawn. Returns them."""
        children = []
        for row, parent in enumerate(level):
            count = min(top, room - len(children), int((probs[row] > 0).sum()))
            if count <= 0:
                break
            self.prob_rows.append(probs[row])
            base = self.scores[parent] if parent >= 0 else 0.0
            for token in torch.multinomial(probs[row], count, replacement=False, generator=generator).tolist():
                children.append(len(self.ids))
                self.ids.append(token)
                self.parents.append(parent)
                self.scores.append(base + math.log(float(probs[row, token])))
                self.parent_row.append(row)
                self.drawn_from.append(len(self.prob_rows) - 1)
        return children

    def likeliest(self, nodes: list[int], beam: int) -> list[int]:
        return sorted(nodes, key=lambda i: -self.scores[i])[:beam]

    def visibility(self, level: list[int], start: int, base: int) -> torch.Tensor:
        """Gives the nodes of `level` cache slots start, start + 1, ... and returns their mask
        [len(level), start + len(level)] (bool): the true prefix [0, base), their expanded ancestors, themselves."""
        mask = torch.zeros(len(level), start + len(level), dtype=torch.bool)
        mask[:, :base] = True
        for row, node in enumerate(level):
            self.slot_of[node] = start + row
            while node >= 0:
                mask[row, self.slot_of[node]] = True
                node = self.parents[node]
        return mask

    def proposal(self, limit: int | None, vocab: torch.Tensor, vocab_limit: int) -> TreeProposal:
        """The `limit` likeliest candidates (None: all, in drafting order) as a TreeProposal (q rows: their
        draft distributions over ids 0 .. vocab_limit - 1, zero off the draft vocabulary vocab [Vd])."""
        kept = list(range(len(self.ids))) if limit is None else select_nodes(self.parents, self.scores, limit)
        renumber = {old: new for new, old in enumerate(kept)}
        parents = [renumber[self.parents[i]] if self.parents[i] >= 0 else -1 for i in kept]
        rows = [self.drawn_from[i] for i in kept]

        def q_rows(nodes: list[int]) -> torch.Tensor:
            if self.prob_rows:
                return torch.stack([self.prob_rows[rows[i]] for i in nodes])  # [n, V]
            logp = torch.stack([self.logp_rows[rows[i]] for i in nodes])  # [n, Vd]
            full = logp.new_zeros((len(nodes), vocab_limit))
            full[:, vocab] = logp.exp()
            return full

        return TreeProposal([self.ids[i] for i in kept], parents, q_rows)


def select_nodes(parents: list[int], scores: list[float], limit: int) -> list[int]:
    """The `limit` likeliest nodes (scores: cumulative log-probabilities, never above the parent's), as a
    tree again: a node whose parent is not kept is skipped. Returned by level, best first within it."""
    kept: set[int] = set()
    for node in sorted(range(len(parents)), key=lambda i: (-scores[i], i)):
        if len(kept) == limit:
            break
        if parents[node] < 0 or parents[node] in kept:
            kept.add(node)
    level = depths(parents)
    return sorted(kept, key=lambda i: (level[i], -scores[i], i))


def greedy_path(ids: list[int], parents: list[int], choices: list[int]) -> list[int]:
    """Nodes kept by greedy verification: from the root, follow the child whose token equals the target's
    choice (choices [N + 1]: the target's argmax of each row), until no child does."""
    path, row = [], 0
    while True:
        parent = path[-1] if path else -1
        child = next((i for i, p in enumerate(parents) if p == parent and ids[i] == choices[row]), None)
        if child is None:
            return path
        path.append(child)
        row = child + 1


def shown_nodes(parents: list[int], path: list[int]) -> list[int]:
    """The chain a tree step reports: the path, then its last node's first child (the rejected token), if any."""
    parent = path[-1] if path else -1
    rejected = next((i for i, p in enumerate(parents) if p == parent), None)
    return path + ([rejected] if rejected is not None else [])
