"""EAGLE: one decoder layer over [the target's feature; the next token's embedding] predicts the next feature,
which the target's head rows turn into a token; fed its own predictions it drafts K tokens (Li et al. 2024),
or, EAGLE-2, a dynamic tree of the likeliest continuations verified in one target forward (tree.py). Reads
the target's final-norm features through Drafter.observe (EAGLE-3, eagle3.py: several layers' outputs).

Ships `smollm2-135m-eagle` and its tree drafts `smollm2-135m-eagle-tree` (8 nodes) and
`smollm2-135m-eagle-tree-60` (EAGLE-2's GPU setting).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from specdec.drafters.base import CostShape, DrafterSpec, NoCostModel, Proposal, ProposalContext
from specdec.drafters.draft_vocab import FeatureDrafter, widen
from specdec.drafters.heads import EagleHead, load_eagle_state, module_product
from specdec.drafters.lab_layer_cache import LabLayerCache, lab_product, layer_cache
from specdec.drafters.shipped import draft_vocab_rows, drafter_dir, load_tensors, prefixed, read_meta, shipped_spec
from specdec.engine.sampling import probabilities
from specdec.engine.tree import MAX_TREE_DEPTH, GrowingTree, TreeProposal, TreeShape
from specdec.runners.block_weights import embedder
from specdec.runners.lab_kernels import packed_layer_bytes, packed_linear_bytes
from specdec.runners.packed_weights import weight_bytes
from specdec.runners.threads import model_threads

import torch

EAGLE, EAGLE_TREE, EAGLE_TREE_60 = "smollm2-135m-eagle", "smollm2-135m-eagle-tree", "smollm2-135m-eagle-tree-60"
TREE_DIAGRAM = ("the {head} head's top {top} children of its {beam} likeliest nodes per level ──▶ a tree of {nodes} "
                "tokens ──▶ one target forward (each node sees only its ancestors) ──▶ the branch that matches the "
                "target's choices")


class EagleDrafter(FeatureDrafter):
    family = "eagle"

    def __init__(self, target, vocab_limit: int, head: EagleHead, draft_vocab: torch.Tensor, name: str,
                 description: str):
        super().__init__(target, vocab_limit, draft_vocab, name, description)
        self.head = head.to(self.dtype).eval()
        self.target_layers = head.feature_layers  # (): the final-norm states; else EAGLE-3's layers (base.py)
        self.embed = embedder(target.model.get_input_embeddings())  # ids -> rows (a GGUF's blocks too)
        self.cache = None
        self.true_length = 0  # head-cache positions computed from true features

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        super().start(prompt_ids, max_length)
        tree_slots = self.tree_shape.beam * MAX_TREE_DEPTH if self.tree_shape is not None else 0
        threads = lambda rows: model_threads(self.target_model, rows) or 1  # noqa: E731
        self.cache = layer_cache(self.head.layers, self.head.config, max_length + tree_slots, self.dtype,
                                 self.kernels, threads)
        # fuse and fc on the same kernels as the layers, where those run there
        self.head.use_product(lab_product(threads) if isinstance(self.cache, LabLayerCache) else module_product)
        self.true_length = 0
        self.last_out = None  # head output at position true_length - 1

    def rollback(self, keep: int) -> None:
        super().rollback(keep)
        if len(self.features) < self.true_length:
            self.true_length, self.last_out = 0, None  # recompute from the start (not reached through the decoder)

    def _catch_up(self, seq: list[int]) -> torch.Tensor:
        """Run the head over the true (feature, token) pairs it has not read; its output at position
        len(seq) - 2, [1, d], which predicts the feature (and so the token) at len(seq) - 1."""
        n = len(seq)
        # head position p holds the pair (feature p, token p + 1); true pairs exist for p <= n - 2
        if self.true_length > n - 1:  # (not reached through the decoder) forget what seq does not confirm
            self.true_length, self.last_out = 0, None
        self.cache.length = self.true_length
        new = range(self.true_length, n - 1)
        if len(new):
            # the target's states as observed, fused here in one call (EagleHead.fused; the identity for a final-norm
            # head): steps with speculation off (auto) leave the head's work to the next draft
            feats = self.head.fused(torch.stack([self.features[p] for p in new]))
            toks = torch.tensor([seq[p + 1] for p in new])
            self.last_out = self.cache.forward(self.head.inputs(feats, self.embed(toks)))[-1:]
            self.true_length = n - 1
        return self.last_out

    @torch.inference_mode()
    def _chain(self, seq: list[int], k: int, context: ProposalContext):
        self.head_rows.follow(seq)
        out = self._catch_up(seq)
        ids, rows = [], []
        for i in range(k):
            # out: predicted feature of position n - 1 + i, as the head feeds itself; the rows read it normed
            q, token = self.head_rows.rows(self.head.normed(out), context)
            rows.append(q)
            ids.append(token[0])
            if context.unsure(q[0]):
                break
            if i + 1 < k:
                emb = self.embed(torch.tensor([token[0]]))
                out = self.cache.forward(self.head.inputs(out, emb))
        return ids, torch.cat(rows)

    def propose(self, seq: list[int], k: int, context: ProposalContext) -> Proposal:
        if k <= 0 or len(self.features) < len(seq) - 1:
            return Proposal()
        ids, q = self._timed(self._chain, seq, k, context)
        return Proposal(ids, q)

    def propose_tree(self, seq: list[int], depth: int, context: ProposalContext | None = None) -> TreeProposal:
        """A tree draft of min(depth, MAX_TREE_DEPTH) levels and at most self.tree_shape.nodes nodes: the
        likeliest tokens when greedy, draws from q without replacement when context samples (tree.py)."""
        depth = min(depth, MAX_TREE_DEPTH)
        if depth <= 0 or len(self.features) < len(seq) - 1:
            return TreeProposal([], [], lambda nodes: None)
        return self._timed(self._tree, seq, depth, context if context is not None and context.sampling else None)

    @torch.inference_mode()
    def _tree(self, seq: list[int], depth: int, sampling: ProposalContext | None) -> TreeProposal:
        """EAGLE-2's dynamic tree: each level runs the head over the `beam` likeliest nodes (cumulative draft
        log-probability) and drafts their `top` likeliest children; the `nodes` likeliest of all are kept.
        Sampling: the children are draws from q without replacement, each level taking an even share of the
        `nodes` budget left (decided before drawing: no draw is dropped for its value)."""
        self.head_rows.follow(seq)
        shape, vocab = self.tree_shape, self.head_rows.ids
        root_out = self._catch_up(seq)  # [1, d]
        base = self.cache.length  # slots of true (feature, token) pairs; the tree's come after them
        tree, level, features = GrowingTree(), [-1], root_out  # features: [len(level), d], before head.norm
        for d in range(1, depth + 1):
            small = self.head_rows.logits(self.head.normed(features)).float()  # [len(level), Vd]
            if sampling is None:
                children = tree.add_children(level, torch.log_softmax(small, dim=-1), vocab, shape.top)
            else:  # the budget left, shared evenly by the levels left (at least one node each while it lasts)
                left = shape.nodes - len(tree.ids)
                room = min(left, max(1, left // (depth - d + 1)))
                probs = probabilities(widen(small, vocab, self.vocab_limit), sampling.warpers)  # [len(level), V]
                children = tree.add_draws(level, probs, shape.top, room, sampling.generator)
            if d == depth or not children or (sampling is not None and len(tree.ids) >= shape.nodes):
                break
            level = tree.likeliest(children, shape.beam)
            mask = tree.visibility(level, self.cache.length, base)
            x = self.head.inputs(torch.stack([features[tree.parent_row[i]] for i in level]),
                                 self.embed(torch.tensor([tree.ids[i] for i in level])))
            # a node of depth d holds (feature of its parent, its token) at position len(seq) - 2 + d
            features = self.cache.forward(x, positions=[len(seq) - 2 + d] * len(level), mask=mask)
        self.cache.length = base  # forget the tree's slots: the next step catches up from true features
        return tree.proposal(shape.nodes if sampling is None else None, vocab, self.vocab_limit)

    def param_bytes(self) -> int:
        return (weight_bytes(self.head) + sum(map(packed_layer_bytes, self.head.layers)) + packed_linear_bytes(self.head)
                + self.head_rows.bytes())

    def state_bytes(self) -> int:
        return (self.cache.bytes() if self.cache is not None else 0) + self.head_rows.context_bytes()

    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        return [
            shipped_spec(
                cls, EAGLE, "EAGLE",
                "one decoder layer over [target feature; next-token embedding] (8.4 MB); reads the target's "
                "features; costs 1 layer + a 12k-token head per drafted token",
                "[h_t ; embedding of x_t+1] ──▶ 1 decoder layer ──▶ predicted h_t+1 ──▶ target head rows ──▶ x̂, "
                "then [predicted h ; x̂] ──▶ … (K times)",
                build_eagle),
            # the head's tree drafts (EAGLE-2): a small tree, and EAGLE-2's own GPU setting (top-10, 60 nodes)
            tree_spec(cls, EAGLE_TREE, TreeShape(top=3, beam=3, nodes=8), weights=EAGLE, head="EAGLE"),
            tree_spec(cls, EAGLE_TREE_60, TreeShape(top=10, beam=10, nodes=60), weights=EAGLE, head="EAGLE",
                      cost_note="; built for a GPU, where scoring 61 tokens costs about what 1 does"),
        ]

    @classmethod
    def cost_shape(cls, spec: DrafterSpec, meta: dict, hidden: int) -> CostShape:
        """fc([feature; embedding]) 2d -> d, its decoder layer(s) (EAGLE-3: a narrower MLP), the draft-vocabulary
        head rows; an EAGLE-3 head's fusion runs once per verified position, not per drafted token. Chains only:
        the roofline model prices chain drafts, not trees."""
        if spec.tree is not None:
            raise NoCostModel(f"No cost model for {spec.name}: the roofline model prices chain drafts, not trees; "
                              f"choose {spec.weights} for the same head drafting a chain")
        return CostShape(layers=meta.get("layers", 1), head_rows=draft_vocab_rows(meta),
                         intermediate=meta.get("intermediate_size"), extra_params=2 * hidden * hidden)


def tree_spec(drafter: type, name: str, shape: TreeShape, weights: str, head: str, cost_note: str = "",
              build=None) -> DrafterSpec:
    """An EAGLE-2 tree draft of the head in assets/drafters/<weights>."""
    summary = (f"the {head} head drafts a tree of {shape.nodes} tokens (the {shape.top} likeliest children of the "
               f"{shape.beam} likeliest nodes per level; at T > 0 drawn from q), verified in one target forward"
               f"{cost_note}")
    diagram = TREE_DIAGRAM.format(head=head, top=shape.top, beam=shape.beam, nodes=shape.nodes)
    title = "EAGLE-2 tree" if head == "EAGLE" else f"EAGLE-2 tree of the {head} head"
    return shipped_spec(drafter, name, title, summary, diagram, build or build_eagle, tree=shape, weights=weights)


def load_eagle_head(config, folder: Path) -> tuple[EagleHead, torch.Tensor]:
    """The EAGLE (or EAGLE-3: zoo.json's feature_layers) head saved in folder (float32 of float16 values, eval
    mode) and its draft vocabulary (ids)."""
    tensors = load_tensors(folder)
    return eagle_head_from(config, tensors, read_meta(folder)), tensors["draft_vocab"]


def eagle_head_from(config, tensors: dict, meta: dict) -> EagleHead:
    """The head in a shipped entry's tensors ('head.*') and zoo.json `meta`, as load_eagle_head gives it."""
    head = EagleHead(config, meta.get("layers", 1), tuple(meta.get("feature_layers", ())),
                     meta.get("intermediate_size"), meta.get("input_layout", "fc"))
    head.load_state_dict(load_eagle_state(prefixed(tensors, "head.")))
    return head.eval()


def build_eagle(target, name: str, description: str, folder: Optional[Path] = None,
                drafter: type = EagleDrafter) -> EagleDrafter:
    head, draft_vocab = load_eagle_head(target.model.config, folder or drafter_dir(name))
    return drafter(target, target.real_vocab_size, head, draft_vocab, name, description)
