"""How a tree draft (engine/tree.py) is fed to the target in one forward: each node's depth (its position after
the root) and the attention mask that lets a node see only the root, its ancestors and itself.

Shapes: N nodes, numbered so that a parent precedes its children (parents[i] < i; -1 for a child of the root).
"""
from __future__ import annotations

import torch


def depths(parents: list[int]) -> list[int]:
    """[N] depth of each node (the root's children have depth 1)."""
    out: list[int] = []
    for parent in parents:
        out.append(1 if parent < 0 else out[parent] + 1)
    return out


def ancestor_mask(parents: list[int], device=None) -> torch.Tensor:
    """[N + 1, N + 1] bool over root + nodes: row j may attend column i (i is j, or an ancestor of j)."""
    n = len(parents)
    mask = torch.zeros(n + 1, n + 1, dtype=torch.bool)
    mask[:, 0] = True
    for node, parent in enumerate(parents):
        row = node + 1
        if parent >= 0:
            mask[row] = mask[parent + 1]
        mask[row, row] = True
    return mask.to(device) if device is not None else mask
