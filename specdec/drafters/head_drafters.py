"""Runtime drafters of the zoo: Medusa heads and the EAGLE-style head (both read the target's
final-norm hidden states through Drafter.observe; an EAGLE-3 head reads several of its layers' outputs and
fuses them when it next drafts), and DraftVocabModelDrafter, the small draft model
and the early exit (a LlamaForCausalLM that shares the target's tensors, build.py).

q rows are over the target's vocabulary 0 .. vocab_limit - 1. All four score only their draft
vocabulary (the target's head rows of the ids the target most often predicts, EAGLE-3 style), so a
draft token costs Vd head rows, not the whole vocabulary; every other id has q = 0, which keeps
speculative sampling exact (the verifier only needs q to be the distribution the draft was drawn from).
The heads (Medusa, EAGLE) also score the ids their request's text holds outside that vocabulary
(_HeadRows: a few dozen rows more, the words of the prompt's topic); the draft models do not (their
network ends in the draft vocabulary's rows).
"""
from __future__ import annotations

import time

from specdec.drafters.base import Drafter, Proposal, ProposalContext
from specdec.drafters.draft_model import ModelDrafter
from specdec.drafters.heads import EagleHead, LayerCache, MedusaHeads
from specdec.engine.sampling import probabilities, sample
from specdec.engine.tree import MAX_TREE_DEPTH, GrowingTree, TreeProposal
from specdec.runners.packed_weights import linear, linear_weights, weight_bytes

import torch
import torch.nn.functional as F
from torch import nn


def vocab_ids(draft_vocab: torch.Tensor, vocab_limit: int) -> torch.Tensor:
    """The draft vocabulary's ids below vocab_limit, [Vd] long."""
    return draft_vocab[draft_vocab < vocab_limit].long()


def head_rows_module(target_model, ids: torch.Tensor, dtype) -> nn.Linear:
    """A Linear d -> Vd holding the target's head rows of `ids` (a gathered copy)."""
    head = target_model.get_output_embeddings()
    rows = nn.Linear(head.in_features, len(ids), bias=head.bias is not None, device="meta")
    rows.weight = nn.Parameter(head.weight.detach()[ids].to(dtype).contiguous(), requires_grad=False)
    if head.bias is not None:
        rows.bias = nn.Parameter(head.bias.detach()[ids].to(dtype), requires_grad=False)
    return rows.eval()


def widen(small: torch.Tensor, ids: torch.Tensor, vocab_limit: int) -> torch.Tensor:
    """Draft-vocabulary logits [n, Vd] -> logits [n, vocab_limit], -inf off the draft vocabulary (q = 0)."""
    full = small.new_full((small.shape[0], vocab_limit), float("-inf"))
    full[:, ids] = small
    return full


def draw(small: torch.Tensor, ids: torch.Tensor, vocab_limit: int, context: ProposalContext):
    """q rows [n, vocab_limit] and the drafted ids (argmax when greedy, a draw when sampling) from
    draft-vocabulary logits [n, Vd]."""
    full = widen(small.float(), ids, vocab_limit)
    if context.sampling:
        q = probabilities(full, context.warpers)
        return q, [sample(row, context.generator) for row in q]
    return torch.softmax(full, dim=-1), [int(ids[int(row.argmax())]) for row in small]


class _HeadRows:
    """The target's lm_head rows for a drafter's vocabulary: features [n, d] -> q rows [n, vocab_limit].

    The vocabulary is the trained draft vocabulary plus every id the request's text holds so far that it lacks
    (the context's ids, in the order they first appear). A reply names its topic in the prompt's own words, and the
    tokens of a topic the data never chose are outside the trained vocabulary (docs/zoo.md, "What the first guess
    misses"); with the context's rows the head can draft them, and copy them, as prompt lookup does. The set is a
    function of the text alone (``follow``), so a step drafts the same whatever was drafted and rolled back before.
    """

    def __init__(self, target_model, draft_vocab: torch.Tensor, vocab_limit: int, dtype):
        self.base_ids = vocab_ids(draft_vocab, vocab_limit)  # [Vd]
        self.module = head_rows_module(target_model, self.base_ids, dtype)
        self.weight = self.module.weight  # [Vd, d]
        self.vocab_limit = vocab_limit
        self.follows_context = True  # False: the trained draft vocabulary alone
        self._head = target_model.get_output_embeddings()
        self._in_base = torch.zeros(vocab_limit, dtype=torch.bool)
        self._in_base[self.base_ids] = True
        self._reset()

    def _reset(self) -> None:
        self.scanned: list[int] = []  # the text follow() has read
        self.extra_ids: list[int] = []  # context ids outside the draft vocabulary, by first appearance
        self._extra_at: list[int] = []  # the text position each of them first appears at
        self.extra_rows = self.weight.new_zeros((0, self.weight.shape[1]))  # [Ve, d]
        self.extra_bias = self.weight.new_zeros(0)  # [Ve] (zeros when the target's head has no bias)
        self.ids = self.base_ids  # [Vd + Ve]: column j of logits() is token ids[j]

    def follow(self, seq: list[int]) -> None:
        """Make the vocabulary the draft vocabulary plus the ids of ``seq`` (the request's text, prompt first)."""
        seq = seq if self.follows_context else []
        changed = False
        if seq[:len(self.scanned)] != self.scanned:  # rolled back, or another text: keep what both share
            keep = next((i for i, (a, b) in enumerate(zip(self.scanned, seq)) if a != b), len(seq))
            drop = next((i for i, at in enumerate(self._extra_at) if at >= keep), len(self._extra_at))
            self.scanned = self.scanned[:keep]
            changed = drop < len(self.extra_ids)
            del self.extra_ids[drop:], self._extra_at[drop:]
            self.extra_rows, self.extra_bias = self.extra_rows[:drop], self.extra_bias[:drop]
        known, new, new_at = set(self.extra_ids), [], []
        for at in range(len(self.scanned), len(seq)):
            token = seq[at]
            if token < self.vocab_limit and not self._in_base[token] and token not in known:
                known.add(token)
                new.append(token)
                new_at.append(at)
        self.scanned = list(seq)
        if new:
            picked = torch.tensor(new)
            self.extra_rows = torch.cat([self.extra_rows, self._head.weight.detach()[picked].to(self.weight.dtype)])
            bias = self._head.bias.detach()[picked] if self._head.bias is not None else torch.zeros(len(new))
            self.extra_bias = torch.cat([self.extra_bias, bias.to(self.weight.dtype)])
            self.extra_ids += new
            self._extra_at += new_at
        if new or changed:
            self.ids = torch.cat([self.base_ids, torch.tensor(self.extra_ids, dtype=torch.long)])

    def bytes(self) -> int:
        """The gathered rows of the draft vocabulary (weights: the same for every request)."""
        return weight_bytes(self.module)

    def context_bytes(self) -> int:
        """The rows of the context's ids (per-request state, like a cache)."""
        return (self.extra_rows.numel() + self.extra_bias.numel()) * self.weight.element_size()

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """Logits [n, len(ids)] of features [n, d]."""
        small = linear(features, linear_weights(self.module))
        if not self.extra_ids:
            return small
        return torch.cat([small, F.linear(features, self.extra_rows, self.extra_bias)], dim=-1)

    def rows(self, features: torch.Tensor, context: ProposalContext) -> tuple[torch.Tensor, list[int]]:
        """q rows [n, vocab_limit] and the drafted ids."""
        return draw(self.logits(features), self.ids, self.vocab_limit, context)


class DraftVocabModelDrafter(ModelDrafter):
    """A ModelDrafter whose network ends in the target's head rows of its draft vocabulary (the zoo's
    draft model and early exit learn only those ids' logits: sampled softmax over the draft vocabulary),
    so each draft token pays for Vd head rows instead of the whole vocabulary. Every other id has q = 0."""

    def __init__(self, loaded, vocab_limit: int, ids: torch.Tensor):
        super().__init__(loaded, vocab_limit)
        self.ids = ids  # [Vd]: column j of the network's logits is token ids[j]

    @property
    def model(self):
        """None: the network's logits cover the draft vocabulary only, which transformers' assisted
        generation cannot take as an assistant (so bench has no transformers counterpart for it)."""
        return None

    def draw(self, logits: torch.Tensor, context: ProposalContext) -> tuple[torch.Tensor, int]:
        """logits [1, Vd] over the draft vocabulary -> the q row [1, vocab_limit] and the drafted id."""
        q, tokens = draw(logits, self.ids, self.vocab_limit, context)
        return q, tokens[0]


class _FeatureDrafter(Drafter):
    """Bookkeeping shared by drafters that read the target's features."""

    reads_target_hidden = True

    def __init__(self, target, vocab_limit: int, draft_vocab: torch.Tensor, name: str, description: str):
        super().__init__(vocab_limit)
        self.name, self.description = name, description
        self.target_model = target.model
        self.dtype = next(target.model.parameters()).dtype
        self.head_rows = _HeadRows(target.model, draft_vocab, vocab_limit, self.dtype)
        self.features: list[torch.Tensor] = []  # one row per observed position: [d], or [m * d] (EAGLE-3's layers)

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        self.features = []
        self.max_length = max_length
        self.head_rows.follow([])  # the last request's context rows go with it

    def observe(self, hidden: torch.Tensor) -> None:
        self.features.extend(hidden.detach().to(self.dtype).unbind(0))

    def rollback(self, keep: int) -> None:
        # features of positions >= keep - 1 ... the decoder observes the confirmed ones after this call
        del self.features[max(0, keep - 1):]

    def _timed(self, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        self.own_forward_calls += 1
        self.own_forward_time_s += time.perf_counter() - start
        return out


class MedusaDrafter(_FeatureDrafter):
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


class EagleDrafter(_FeatureDrafter):
    family = "eagle"

    def __init__(self, target, vocab_limit: int, head: EagleHead, draft_vocab: torch.Tensor, name: str,
                 description: str):
        super().__init__(target, vocab_limit, draft_vocab, name, description)
        self.head = head.to(self.dtype).eval()
        self.target_layers = head.feature_layers  # (): the final-norm states; else EAGLE-3's layers (base.py)
        self.embedding = target.model.get_input_embeddings().weight
        self.cache = None
        self.true_length = 0  # head-cache positions computed from true features

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        super().start(prompt_ids, max_length)
        tree_slots = self.tree_shape.beam * MAX_TREE_DEPTH if self.tree_shape is not None else 0
        self.cache = LayerCache(self.head.layers, self.head.config, max_length + tree_slots, self.dtype)
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
            self.last_out = self.cache.forward(self.head.inputs(feats, F.embedding(toks, self.embedding)))[-1:]
            self.true_length = n - 1
        return self.last_out

    @torch.inference_mode()
    def _chain(self, seq: list[int], k: int, context: ProposalContext):
        self.head_rows.follow(seq)
        out = self._catch_up(seq)
        ids, rows = [], []
        for i in range(k):
            # out: predicted feature of position n - 1 + i, as the head feeds itself; the rows read it normed
            q, token = self.head_rows.rows(self.head.norm(out), context)
            rows.append(q)
            ids.append(token[0])
            if context.unsure(q[0]):
                break
            if i + 1 < k:
                emb = F.embedding(torch.tensor([token[0]]), self.embedding)
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
            small = self.head_rows.logits(self.head.norm(features)).float()  # [len(level), Vd]
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
                                 F.embedding(torch.tensor([tree.ids[i] for i in level]), self.embedding))
            # a node of depth d holds (feature of its parent, its token) at position len(seq) - 2 + d
            features = self.cache.forward(x, positions=[len(seq) - 2 + d] * len(level), mask=mask)
        self.cache.length = base  # forget the tree's slots: the next step catches up from true features
        return tree.proposal(shape.nodes if sampling is None else None, vocab, self.vocab_limit)

    def param_bytes(self) -> int:
        return weight_bytes(self.head) + self.head_rows.bytes()

    def state_bytes(self) -> int:
        return (self.cache.bytes() if self.cache is not None else 0) + self.head_rows.context_bytes()


# the families whose drafters score their text's own ids too (_HeadRows; the model cards say so)
FOLLOWS_TEXT = frozenset(cls.family for cls in (MedusaDrafter, EagleDrafter))
