"""The model-call interface the decoder talks to, and its Hugging Face eager implementation.

A runner owns one sequence's KV cache. The decoder only ever calls:
    prefill(ids)          -> logits of the last position, shape [V]
    forward(new_ids)      -> logits for each new position, shape [len(new_ids), V]
    rollback(length)      -> forget every cached position from `length` on
and, for tree drafts (tree.py), forward_tree(root, ids, parents) then keep(start, rows).
A runner made with keep_hidden=True also leaves `hidden`, the final-norm hidden states (the
language-model head's input) of every position of its last call, shape [len(ids), d], for drafters
that read the target's features (Medusa, EAGLE). keep_hidden=(L1, L2, ...) leaves instead the residual
stream after L1, L2, ... decoder layers (0: the embeddings; each below the layer count, where transformers'
hidden_states[L] is the same state), concatenated: [len(ids), m * d]
(EAGLE-3 reads a low, a middle and a high layer; drafters.base.hidden_request).
ModelRunner below lists every one of these; the decoder needs nothing else, so every runner serves
verification unchanged: HFEagerRunner below, and the runners on a static cache (static.py's template,
StaticLlamaRunner and lab_kernels.LabKernelRunner). Which one a model gets: selection.py.
"""
from __future__ import annotations

import time
from typing import Protocol

from specdec.runners.cache_compat import (
    accepts_logits_to_keep,
    cache_argument_name,
    cache_tensors,
    crop_cache,
    crop_style,
)
from specdec.runners.threads import threads_for_model
from specdec.runners.tree_attention import ancestor_mask, depths

import torch
from transformers import DynamicCache


class ModelRunner(Protocol):
    length: int  # positions held in the cache
    forward_calls: int  # decode forwards (prefill excluded)
    forward_time_s: float  # time inside model calls, prefill included

    def prefill(self, ids: list[int]) -> torch.Tensor | None: ...

    def forward(self, ids: list[int]) -> torch.Tensor: ...

    def rollback(self, length: int) -> None: ...

    def kv_bytes(self) -> int: ...

    # Tree drafts (tree.py); a runner without them gets chain drafts only.
    def forward_tree(self, root: int, ids: list[int], parents: list[int]) -> torch.Tensor: ...

    def keep(self, start: int, rows: list[int]) -> None: ...

    # keep_hidden runners only: the kept hidden states of the last call, [len(ids), d or m * d].
    hidden: torch.Tensor | None


class TimedRunner:
    """Counting, timing and length bookkeeping shared by runners; subclasses implement
    _call(ids, last_only) -> logits [n or 1, V] (last_only: the last position's only; `hidden` still gets every
    position's), rollback() and _kv_tensors()."""

    def __init__(self, model, vocab_limit: int, keep_hidden: bool | tuple[int, ...] = False):
        self.model = model
        self.device = next(model.parameters()).device
        self.vocab_limit = vocab_limit  # logits beyond the shared real vocabulary are dropped
        self.keep_hidden = bool(keep_hidden)
        # the layers whose outputs `hidden` holds; empty: the final-norm states (module docstring)
        self.hidden_layers = tuple(keep_hidden) if isinstance(keep_hidden, tuple) else ()
        self.hidden: torch.Tensor | None = None  # [n, d] of the last call, when keep_hidden
        self.length = 0
        self.forward_calls = 0
        self.forward_time_s = 0.0
        self._tree: list[int] | None = None  # parents of the nodes of a pending forward_tree
        self._sync = torch.cuda.synchronize if self.device.type == "cuda" else None

    def prefill(self, ids: list[int]) -> torch.Tensor | None:
        return self._timed(ids, last_only=True)[-1] if ids else None

    def forward(self, ids: list[int]) -> torch.Tensor:
        self.forward_calls += 1
        return self._timed(ids, last_only=False)

    def forward_tree(self, root: int, ids: list[int], parents: list[int]) -> torch.Tensor:
        """Score a tree draft (tree.py) in one call: root then the N nodes, each at position length +
        its depth, seeing the cache, its ancestors and itself -> logits [N + 1, V]. Follow with keep()."""
        self.forward_calls += 1
        self._tree = parents
        try:
            return self._timed([root] + ids, last_only=False)
        finally:
            self._tree = None

    @torch.inference_mode()
    def keep(self, start: int, rows: list[int]) -> None:
        """After forward_tree at cache position `start`: keep only the given rows (ascending, root = 0) of
        that call, moved to positions start, start + 1, ... (and their rows of `hidden`)."""
        index = torch.tensor(rows, device=self.device) + start
        for tensor in self._kv_tensors():  # [1, kv_heads, positions, head_dim]
            tensor[:, :, start : start + len(rows)] = tensor[:, :, index]
        self.rollback(start + len(rows))
        if self.keep_hidden and self.hidden is not None:
            self.hidden = self.hidden[rows]

    def kv_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._kv_tensors())

    def _kv_tensors(self) -> list[torch.Tensor]:
        """The runner's key and value tensors, each [1, kv_heads, positions, head_dim]."""
        raise NotImplementedError

    def _tree_layout(self, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """For the pending forward_tree: positions [N + 1] and mask [N + 1, start + N + 1] (bool: may attend)."""
        parents = self._tree
        new = ancestor_mask(parents, self.device)
        positions = start + torch.tensor([0] + depths(parents), device=self.device)
        visible = torch.ones(new.shape[0], start, dtype=torch.bool, device=self.device)
        return positions, torch.cat([visible, new], dim=1)

    def _timed(self, ids: list[int], last_only: bool) -> torch.Tensor:
        start = time.perf_counter()
        with threads_for_model(self.model, len(ids), self.device):  # the fastest count for these rows (threads.py)
            logits = self._call(ids, last_only)
            if self._sync:
                self._sync()
        self.forward_time_s += time.perf_counter() - start
        self.length += len(ids)
        return logits


class HFEagerRunner(TimedRunner):
    """Batch-1 decoding through a transformers model with a DynamicCache."""

    def __init__(self, model, vocab_limit: int, keep_hidden: bool | tuple[int, ...] = False):
        super().__init__(model, vocab_limit, keep_hidden)
        self.cache = DynamicCache()
        self._cache_arg = cache_argument_name(model)
        self._crop_style = None
        self._trim_logits = accepts_logits_to_keep(model)

    def rollback(self, length: int) -> None:
        if length >= self.length:
            return
        self._crop_style = self._crop_style or crop_style(self.cache)
        crop_cache(self.cache, self.length, length, self._crop_style)
        self.length = length

    def _kv_tensors(self) -> list[torch.Tensor]:
        return cache_tensors(self.cache)

    @torch.inference_mode()
    def _call(self, ids: list[int], last_only: bool) -> torch.Tensor:
        input_ids = torch.tensor([ids], dtype=torch.long, device=self.device)
        kwargs = {self._cache_arg: self.cache, "use_cache": True}
        if self._tree is not None:  # a 4D float mask is used as given (0: attend, dtype min: masked)
            positions, mask = self._tree_layout(self.length)
            dtype = next(self.model.parameters()).dtype
            blocked = torch.zeros(mask.shape, dtype=dtype, device=self.device).masked_fill(~mask, torch.finfo(dtype).min)
            kwargs.update(position_ids=positions[None], attention_mask=blocked[None, None])
        if self._trim_logits:  # the hook below needs the head's input at every position
            kwargs["logits_to_keep"] = 1 if last_only and (self.hidden_layers or not self.keep_hidden) else 0
        if not self.keep_hidden:
            logits = self.model(input_ids=input_ids, **kwargs).logits  # [1, n, V_model]
            return logits[0, :, : self.vocab_limit].float()  # [n, V]
        if self.hidden_layers:
            out = self.model(input_ids=input_ids, output_hidden_states=True, **kwargs)
            self.hidden = torch.cat([out.hidden_states[layer][0] for layer in self.hidden_layers], dim=-1)
            return out.logits[0, :, : self.vocab_limit].float()
        captured = []
        head = self.model.get_output_embeddings()
        handle = head.register_forward_pre_hook(lambda module, args: captured.append(args[0]))
        try:
            logits = self.model(input_ids=input_ids, **kwargs).logits
        finally:
            handle.remove()
        self.hidden = captured[-1][0]  # [n, d]: what the head read
        rows = logits[0, -1:] if last_only else logits[0]  # [n or 1, V_model]
        return rows[:, : self.vocab_limit].float()
