"""EAGLE-3: the EAGLE head over a fusion of several of the target's layers (low, middle and high) instead of its
last feature (Li et al. 2025), the layer vLLM's eagle3 runs. The runners keep those layers' outputs for it
(Drafter.target_layers); the head fuses them when it next drafts (heads.EagleHead.fused).

Ships `smollm2-135m-eagle3` (layers 2, 15 and 27 of 30) and its 8-node tree draft `smollm2-135m-eagle3-tree`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from specdec.drafters.base import DrafterSpec
from specdec.drafters.eagle import EagleDrafter, build_eagle, tree_spec
from specdec.drafters.shipped import shipped_spec
from specdec.engine.tree import TreeShape

EAGLE3, EAGLE3_TREE = "smollm2-135m-eagle3", "smollm2-135m-eagle3-tree"


class Eagle3Drafter(EagleDrafter):
    """The EAGLE drafter with an EAGLE-3 head (the same drafting; the head reads three of the target's layers)."""

    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        return [
            shipped_spec(
                cls, EAGLE3, "EAGLE-3",
                "one decoder layer over [next-token embedding; a fusion of the target's layers 2, 15 and 27], the "
                "layer vLLM's eagle3 runs (7.1 MB); reads three of the target's layers; costs 1 layer + a 12k-token "
                "head per drafted token",
                "[embedding of x_t+1 ; fc(h²_t ; h¹⁵_t ; h²⁷_t)] ──▶ 1 decoder layer ──▶ ĥ_t+1 ──▶ norm, target head "
                "rows ──▶ x̂, then [x̂ ; ĥ] ──▶ … (K times)",
                build_eagle3),
            tree_spec(cls, EAGLE3_TREE, TreeShape(top=3, beam=3, nodes=8), weights=EAGLE3, head="EAGLE-3",
                      build=build_eagle3),
        ]


def build_eagle3(target, name: str, description: str, folder: Optional[Path] = None) -> Eagle3Drafter:
    return build_eagle(target, name, description, folder, Eagle3Drafter)
