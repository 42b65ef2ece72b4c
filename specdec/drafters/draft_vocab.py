"""The draft vocabulary: the target's head rows of the ids a trained drafter scores.

Every shipped drafter scores only its draft vocabulary (the target's head rows of the ids the target most often
predicts, EAGLE-3 style), so a draft token costs Vd head rows, not the whole vocabulary; every other id has
q = 0, which keeps speculative sampling exact (the verifier only needs q to be the distribution the draft was
drawn from). q rows are over the target's vocabulary 0 .. vocab_limit - 1.

The heads (Medusa, EAGLE: FeatureDrafter) also score the ids their request's text holds outside that
vocabulary (HeadRows: a few dozen rows more, the words of the prompt's topic); the draft models do not (their
network ends in the draft vocabulary's rows).
"""
from __future__ import annotations

import time
from typing import ClassVar

from specdec.drafters.base import Drafter, ProposalContext, rehearse
from specdec.engine.sampling import probabilities, sample
from specdec.runners import block_weights, native_kernels
from specdec.runners.block_weights import BlockLinear
from specdec.runners.packed_weights import linear, linear_weights, weight_bytes
from specdec.runners.threads import model_threads

import torch
import torch.nn.functional as F
from torch import nn


def vocab_ids(draft_vocab: torch.Tensor, vocab_limit: int) -> torch.Tensor:
    """The draft vocabulary's ids below vocab_limit, [Vd] long."""
    return draft_vocab[draft_vocab < vocab_limit].long()


def head_rows_module(target_model, ids: torch.Tensor, dtype, blocks: bool = False) -> nn.Module:
    """A Linear d -> Vd holding the target's head rows of `ids` (a gathered copy). A target whose head is a GGUF's
    blocks gives its rows dequantised, or with blocks=True (a network that ends in a runner's head product, as the
    draft model's does) the same blocks gathered, where their count fills whole groups of the kernels."""
    head = target_model.get_output_embeddings()
    if isinstance(head, BlockLinear) and blocks and len(ids) % native_kernels.group() == 0:
        return BlockLinear(block_weights.gather(head.matrix, ids))
    rows = nn.Linear(head.in_features, len(ids), bias=head.bias is not None, device="meta")
    rows.weight = nn.Parameter(block_weights.head_rows(head, ids).to(dtype).contiguous(), requires_grad=False)
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
    if context.sampling:
        q = probabilities(widen(small.float(), ids, vocab_limit), context.warpers)
        return q, [sample(row, context.generator) for row in q]
    # greedy: the softmax of the draft vocabulary's own logits, spread into the whole vocabulary (0 elsewhere, as
    # softmax gives the -inf of widen): a quarter of the work of a softmax over every id; with the first index of
    # each row's largest logit from the same pass of the lab kernels where they run (sampling.greedy_probabilities)
    fast = native_kernels.softmax_first(small.float())
    first, probs = fast if fast is not None else (small.argmax(dim=-1), torch.softmax(small.float(), dim=-1))
    q = small.new_zeros((small.shape[0], vocab_limit), dtype=torch.float32)
    q.index_copy_(1, ids, probs)
    return q, ids[first].tolist()


class HeadRows:
    """The target's lm_head rows for a drafter's vocabulary: features [n, d] -> q rows [n, vocab_limit].

    The vocabulary is the trained draft vocabulary plus every id the request's text holds so far that it lacks
    (the context's ids, in the order they first appear). A reply names its topic in the prompt's own words, and the
    tokens of a topic the data never chose are outside the trained vocabulary (docs/zoo.md, "What the first guess
    misses"); with the context's rows the head can draft them, and copy them, as prompt lookup does. The set is a
    function of the text alone (``follow``), so a step drafts the same whatever was drafted and rolled back before.
    """

    def __init__(self, target_model, draft_vocab: torch.Tensor, vocab_limit: int, dtype, kernels: str = "torch"):
        self.base_ids = vocab_ids(draft_vocab, vocab_limit)  # [Vd]
        self.module = head_rows_module(target_model, self.base_ids, dtype)
        self.weight = self.module.weight  # [Vd, d]
        self._target_model = target_model
        # on the target's lab kernels (its measured path), the draft vocabulary's rows are one product on both
        # cores, as int8 rows made once: the product reads every row per drafted token and is bound by memory, and
        # half the bytes of float16 halve its time with the drafted tokens unchanged but for near ties (docs/engine.md,
        # "Lab kernels"); a drafting step otherwise runs its torch ops on one thread (threads.step_threads)
        lab = kernels == "lab" and self.module.bias is None and native_kernels.available() and \
            self.weight.dtype == torch.float32 and self.weight.shape[0] % native_kernels.group() == 0
        self.lab_packed = native_kernels.pack_int8(self.weight) if lab else None
        self.vocab_limit = vocab_limit
        self.follows_context = True  # False: the trained draft vocabulary alone
        self._head = target_model.get_output_embeddings()
        self._in_base = torch.zeros(vocab_limit, dtype=torch.bool)
        self._in_base[self.base_ids] = True
        self.prepare()
        self._reset()

    def prepare(self) -> None:
        """Resolve the rows' packed copy (packed_weights.py) for the products of the run that starts: once per run,
        not once per draft step."""
        self.packed = linear_weights(self.module) if self.lab_packed is None else None

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
            self.extra_rows = torch.cat([self.extra_rows,
                                         block_weights.head_rows(self._head, picked).to(self.weight.dtype)])
            bias = self._head.bias.detach()[picked] if self._head.bias is not None else torch.zeros(len(new))
            self.extra_bias = torch.cat([self.extra_bias, bias.to(self.weight.dtype)])
            self.extra_ids += new
            self._extra_at += new_at
        if new or changed:
            self.ids = torch.cat([self.base_ids, torch.tensor(self.extra_ids, dtype=torch.long)])

    def bytes(self) -> int:
        """The gathered rows of the draft vocabulary (weights: the same for every request)."""
        lab = self.lab_packed.nbytes if self.lab_packed is not None else 0
        return weight_bytes(self.module) + lab

    def context_bytes(self) -> int:
        """The rows of the context's ids (per-request state, like a cache)."""
        return (self.extra_rows.numel() + self.extra_bias.numel()) * self.weight.element_size()

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """Logits [n, len(ids)] of features [n, d]."""
        if self.lab_packed is not None:
            threads = model_threads(self._target_model, features.shape[0]) or 1
            small = native_kernels.product_int8(features, self.lab_packed, threads)
        else:
            small = linear(features, self.packed)
        if not self.extra_ids:
            return small
        return torch.cat([small, F.linear(features, self.extra_rows, self.extra_bias)], dim=-1)

    def rows(self, features: torch.Tensor, context: ProposalContext) -> tuple[torch.Tensor, list[int]]:
        """q rows [n, vocab_limit] and the drafted ids."""
        return draw(self.logits(features), self.ids, self.vocab_limit, context)


class FeatureDrafter(Drafter):
    """Bookkeeping shared by the heads that read the target's features (Medusa, EAGLE): the features observed
    so far, and the head rows of their vocabulary, which follow the request's text."""

    reads_target_hidden = True
    follows_text: ClassVar[bool] = True  # scores its text's own ids too (HeadRows; the model cards say so)

    def __init__(self, target, vocab_limit: int, draft_vocab: torch.Tensor, name: str, description: str):
        super().__init__(vocab_limit)
        self.name, self.description = name, description
        self.target_model = target.model
        self.dtype = next(target.model.parameters()).dtype
        self.kernels = getattr(target, "kernels", "torch")  # the target's measured CPU kernels: "torch" or "lab"
        self.head_rows = HeadRows(target.model, draft_vocab, vocab_limit, self.dtype, self.kernels)
        self.features: list[torch.Tensor] = []  # one row per observed position: [d], or [m * d] (EAGLE-3's layers)

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        self.features = []
        self.max_length = max_length
        self.head_rows.prepare()
        self.head_rows.follow([])  # the last request's context rows go with it

    def observe(self, hidden: torch.Tensor) -> None:
        self.features.extend(hidden.detach().to(self.dtype).unbind(0))

    def warm_up(self) -> None:
        """A throwaway proposal (base.rehearse) from zero states as wide as the target's (one layer's, or each of
        target_layers'): packs the head's and the head rows' weights, which the first proposal would otherwise do."""
        rehearse(self, max(1, len(self.target_layers)) * self.target_model.config.hidden_size)

    def rollback(self, keep: int) -> None:
        # features of positions >= keep - 1 ... the decoder observes the confirmed ones after this call
        del self.features[max(0, keep - 1):]

    def _timed(self, fn, *args):
        start = time.perf_counter()
        out = fn(*args)
        self.own_forward_calls += 1
        self.own_forward_time_s += time.perf_counter() - start
        return out
