"""Medusa: K residual heads on the target's last hidden state, each guessing one position ahead, all K tokens
from one call (Cai et al. 2024). Reads the target's final-norm features through Drafter.observe.

Ships `smollm2-135m-medusa`: 4 heads and the head rows of its draft vocabulary (draft_vocab.py).
"""
from __future__ import annotations

from pathlib import Path

from specdec.drafters.base import CostShape, DrafterSpec, Proposal, ProposalContext
from specdec.drafters.draft_vocab import FeatureDrafter
from specdec.drafters.heads import MedusaHeads
from specdec.drafters.shipped import draft_vocab_rows, drafter_dir, load_tensors, prefixed, read_meta, shipped_spec
from specdec.runners.packed_weights import weight_bytes

import torch

SHIPPED = "smollm2-135m-medusa"


class MedusaDrafter(FeatureDrafter):
    family = "medusa"

    def __init__(self, target, vocab_limit: int, heads: MedusaHeads, draft_vocab: torch.Tensor, name: str,
                 description: str):
        super().__init__(target, vocab_limit, draft_vocab, name, description)
        self.heads = heads.to(self.dtype).eval()

    @torch.inference_mode()
    def propose(self, seq: list[int], k: int, context: ProposalContext) -> Proposal:
        k = min(k, len(self.heads.blocks))
        if k <= 0 or len(self.features) < len(seq) - 1 or len(seq) < 2:
            return Proposal()
        feature = self.features[len(seq) - 2]

        def draft():
            self.head_rows.follow(seq)
            return self.head_rows.rows(self.heads(feature[None])[0, :k], context)

        q, ids = self._timed(draft)
        for i in range(k):
            if context.unsure(q[i]):
                q, ids = q[: i + 1], ids[: i + 1]
                break
        return Proposal(ids, q)

    def param_bytes(self) -> int:
        return weight_bytes(self.heads) + self.head_rows.bytes()

    def state_bytes(self) -> int:
        return sum(f.numel() * f.element_size() for f in self.features[-1:]) + self.head_rows.context_bytes()

    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        return [shipped_spec(
            cls, SHIPPED, "Medusa",
            "4 residual heads on the target's last hidden state (2.7 MB); reads the target's features; costs 4 "
            "small blocks + a 12k-token head, once for all K tokens",
            "target's last feature h ──▶ residual head k (k = 1…4) ──▶ target head rows ──▶ x̂₁ … x̂_K (all at once)",
            build_medusa)]

    @classmethod
    def cost_shape(cls, spec: DrafterSpec, meta: dict, hidden: int) -> CostShape:
        """Residual blocks (d×d + bias) on one feature, then the draft-vocabulary head rows for K, in one call."""
        return CostShape(layers=0, head_rows=draft_vocab_rows(meta), extra_params=meta["heads"] * (hidden * hidden + hidden),
                         one_call=True)


def build_medusa(target, name: str, description: str, folder: Path | None = None) -> MedusaDrafter:
    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    heads = MedusaHeads(target.model.config, meta["heads"])
    heads.load_state_dict(prefixed(tensors, "heads."))
    return MedusaDrafter(target, target.real_vocab_size, heads, tensors["draft_vocab"], name, description)
