"""Early exit: the target's own first layers, plus a trained adapter layer, draft for the full target
(self-speculation, as in Kangaroo; an untrained exit agrees with the target too rarely to pay).

Ships `smollm2-135m-early-exit`: SmolLM2's first 6 of 30 layers, one adapter layer and the head rows of its
draft vocabulary, all but the adapter shared with the target (draft_model.SharedLlama).
"""
from __future__ import annotations

from pathlib import Path

from specdec.drafters.base import CostShape, DrafterSpec
from specdec.drafters.draft_model import DraftVocabModelDrafter, own_layers, vocab_drafter
from specdec.drafters.shipped import draft_vocab_rows, drafter_dir, load_tensors, read_meta, shipped_spec

SHIPPED = "smollm2-135m-early-exit"


class EarlyExitDrafter(DraftVocabModelDrafter):
    family = "early exit"

    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        return [shipped_spec(
            cls, SHIPPED, "early exit",
            "the target's first 6 of 30 layers + a trained adapter layer (7 MB); reads only tokens; costs 7 layers "
            "+ a 12k-token head per drafted token",
            "tokens ──▶ target layers 1–6 ──▶ adapter layer ──▶ target norm + head rows ──▶ x̂₁ … x̂_K (one at a time)",
            build_early_exit)]

    @classmethod
    def cost_shape(cls, spec: DrafterSpec, meta: dict, hidden: int) -> CostShape:
        """The target's first layers + the adapter layers, then the draft-vocabulary head rows."""
        return CostShape(layers=meta["exit_layer"] + meta["adapter_layers"], head_rows=draft_vocab_rows(meta))


def build_early_exit(target, name: str, description: str, folder: Path | None = None) -> EarlyExitDrafter:
    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    exit_layer = meta["exit_layer"]
    adapters = own_layers(target.model, tensors, meta["adapter_layers"], exit_layer)
    return vocab_drafter(EarlyExitDrafter, target, name, description,
                         list(target.model.model.layers[:exit_layer]) + adapters, adapters, tensors)
