"""The runner template for Llama-family models and its torch implementation.

StaticCacheRunner is the template: a preallocated (static) KV cache, rollback by moving an index, and a forward
in three steps, layout (cache slots, positions, mask) -> layers -> head (final norm, the logits rows asked for,
the hidden states a drafter keeps). A runner supplies the layers step and the head's product; everything else
is shared, so every runner of the family fills the cache and keeps hidden states the same way.

StaticLlamaRunner supplies the layers on torch, with no per-call framework overhead. It reuses the Hugging Face
module's weights and rotary tables and performs the same operations in the same order as transformers' Llama
code, so greedy outputs stay token-identical (tests compare its logits and outputs with the HF eager path). On CPU,
linear layers read packed copies of their weights (packed_weights.py): float16 copies with float32 maths
for float32 weights exact in float16, oneDNN-packed copies for bfloat16 weights where the CPU computes
bf16 natively; the same numbers, summed in another order. Below float32 (bfloat16, float16), a forward of
new tokens after the prefill attends row by row, each token over exactly the keys a one-token forward
would give it: SDPA's result for a query row depends on how many query rows share the call (in bfloat16,
prompt lookup's greedy output on SmolLM2 left the target's at its 17th token), so verification would
otherwise not score a token as target-only decoding does. On a CPU, attention runs in float32 over a float32
KV cache whatever the weights' dtype (attention_dtype): torch's CPU SDPA kernel is several times slower in
bfloat16 at decode shapes, which made row-by-row verification cost more than the layers' weights (measured in
docs/engine.md, "CPU"). Which runner a model gets (this one, the lab kernels' or HFEagerRunner): selection.py."""
from __future__ import annotations

import threading
import weakref
from typing import NamedTuple, Optional

from specdec.runners.backend import TimedRunner
from specdec.runners.block_weights import embedder
from specdec.runners.packed_weights import linear, linear_weights, prepared

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

SUPPORTED = ("LlamaForCausalLM", "Qwen2ForCausalLM")
STATIC_ROPE_TYPES = ("default", "linear", "llama3")


def attention_dtype(dtype: torch.dtype, device: torch.device) -> torch.dtype:
    """The dtype of the KV cache and the attention maths: float32 on a CPU (module docstring), else the
    weights' own."""
    return torch.float32 if device.type == "cpu" else dtype


def supports_static(model) -> bool:
    config = model.config
    if type(model).__name__ not in SUPPORTED or getattr(config, "pretraining_tp", 1) not in (None, 1):
        return False
    if getattr(config, "use_sliding_window", False) or any(
        t != "full_attention" for t in (getattr(config, "layer_types", None) or [])
    ):
        return False
    rotary = getattr(model.model, "rotary_emb", None)
    return rotary is not None and getattr(rotary, "rope_type", "default") in STATIC_ROPE_TYPES


_ROTARY: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()
_ROTARY_LOCK = threading.Lock()
ROTARY_TABLES_KEPT = 8  # per model: the (length, dtype, device) tables of the latest runners


def rotary_tables(model, max_length: int, dtype: torch.dtype, device: torch.device) -> tuple:
    """The model's own rotary rows (cos, sin), each [1, max_length, head_dim], for positions 0 .. max_length - 1:
    computed once per shape and shared, read-only, by the runners made after (a run makes a fresh runner)."""
    with _ROTARY_LOCK:  # runs start runners from several threads in the app
        tables, key = _ROTARY.setdefault(model, {}), (max_length, dtype, device)
        if key not in tables:
            with torch.inference_mode():
                positions = torch.arange(max_length, device=device)[None]
                tables[key] = model.model.rotary_emb(torch.empty(0, dtype=dtype, device=device), positions)
            if len(tables) > ROTARY_TABLES_KEPT:
                del tables[next(iter(tables))]
        return tables[key]


class Layout(NamedTuple):
    """Where a forward's new tokens go: cache positions start .. start + n - 1, their rotary rows, and what each
    may attend to (a chain, mask None: token i sees every cached position and new tokens 0 .. i)."""

    start: int  # positions cached before the call
    n: int  # new tokens
    cos: torch.Tensor  # [n, head_dim]: the rotary rows of the new tokens' positions
    sin: torch.Tensor
    mask: Optional[torch.Tensor]  # a tree draft's [n, start + n] (bool: may attend); None: a chain


class StaticCacheRunner(TimedRunner):
    """The runner template (module docstring): a forward is _layout -> _layers -> _head. A runner supplies
    _prepare_weights, _layers and _logits."""

    def __init__(self, model, vocab_limit: int, max_length: int, keep_hidden: bool | tuple[int, ...] = False):
        super().__init__(model, vocab_limit, keep_hidden)
        config = model.config
        self.max_length = max_length
        dtype = next(model.parameters()).dtype
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        shape = (1, self.kv_heads, max_length, self.head_dim)
        layers = model.model.layers
        self.kv_dtype = attention_dtype(dtype, self.device)
        self.keys = [torch.empty(shape, dtype=self.kv_dtype, device=self.device) for _ in layers]
        self.values = [torch.empty(shape, dtype=self.kv_dtype, device=self.device) for _ in layers]
        self.cos, self.sin = rotary_tables(model, max_length, dtype, self.device)  # [1, max_length, head_dim]
        self.embed = embedder(model.model.embed_tokens)  # ids -> rows (a GGUF's blocks dequantise theirs)
        self.final_norm = (model.model.norm.weight, model.model.norm.variance_epsilon)
        self.scaling = layers[0].self_attn.scaling
        self._prepare_weights(model)

    def rollback(self, length: int) -> None:
        self.length = min(self.length, length)  # later writes overwrite the stale positions

    def _kv_tensors(self) -> list[torch.Tensor]:
        return self.keys + self.values  # [1, kv_heads, max_length, head_dim] each

    @torch.inference_mode()
    def _call(self, ids: list[int], last_only: bool) -> torch.Tensor:
        layout = self._layout(len(ids))
        hidden, kept = self._layers(self.embed(torch.tensor(ids, device=self.device)), layout)
        return self._head(hidden, kept, last_only)

    def _layout(self, n: int) -> Layout:
        """The new tokens' cache slots, rotary rows and mask (a pending forward_tree's, else a chain's)."""
        start = self.length
        if start + n > self.max_length:
            raise RuntimeError(f"static cache of {self.max_length} positions is full")
        if self._tree is not None:
            positions, mask = self._tree_layout(start)
            return Layout(start, n, self.cos[0, positions], self.sin[0, positions], mask)
        return Layout(start, n, self.cos[0, start : start + n], self.sin[0, start : start + n], None)

    def _head(self, hidden: torch.Tensor, kept: dict, last_only: bool) -> torch.Tensor:
        """hidden [n, d] after the last layer -> logits [n or 1, V]; leaves `hidden` where kept (backend.py)."""
        # the final norm of every position for a drafter that reads it; the head only where logits are wanted
        every_row = not last_only or (self.keep_hidden and not self.hidden_layers)
        final = rms_norm(hidden if every_row else hidden[-1:], *self.final_norm)  # [n or 1, d]
        if self.hidden_layers:
            self.hidden = torch.cat([kept[layer] for layer in self.hidden_layers], dim=-1)  # [n, m * d]
        elif self.keep_hidden:
            self.hidden = final  # [n, d]
        logits = self._logits(final[-1:] if last_only else final)  # [n or 1, V_model]
        return logits[:, : self.vocab_limit].float()

    def _prepare_weights(self, model) -> None:
        """Whatever weights _layers and _logits read, made once per runner (after the cache exists)."""
        raise NotImplementedError

    def _layers(self, hidden: torch.Tensor, layout: Layout) -> tuple[torch.Tensor, dict]:
        """The decoder layers over the embeddings hidden [n, d], writing the new keys and values into the cache at
        layout.start -> (hidden [n, d] after the last layer, {L: [n, d] the residual stream after L layers, for
        each L in self.hidden_layers; 0: the embeddings})."""
        raise NotImplementedError

    def _logits(self, rows: torch.Tensor) -> torch.Tensor:
        """The language-model head: final-norm rows [r, d] -> logits [r, V_model]."""
        raise NotImplementedError


class StaticLlamaRunner(StaticCacheRunner):
    """The template's layers and head on torch (module docstring)."""

    def __init__(self, model, vocab_limit: int, max_length: int, keep_hidden: bool | tuple[int, ...] = False):
        super().__init__(model, vocab_limit, max_length, keep_hidden)
        self.groups = self.heads // self.kv_heads
        self.exact_rows = next(model.parameters()).dtype != torch.float32  # attend row by row after the prefill

    def _prepare_weights(self, model) -> None:
        """The layers' and the head's weights as `linear` takes them (packed copies where they help)."""
        self.layers, self.head = prepared(model, "static", lambda: (
            [layer_weights(layer) for layer in model.model.layers], linear_weights(model.lm_head)))

    def _layers(self, hidden: torch.Tensor, layout: Layout) -> tuple[torch.Tensor, dict]:
        start, n, mask = layout.start, layout.n, layout.mask
        hidden, cos, sin = hidden[None], layout.cos[None], layout.sin[None]  # [1, n, d], [1, n, head_dim]
        if mask is None and n > 1:  # new token i sees every cached position and new tokens 0..i
            mask = torch.ones(n, start + n, dtype=torch.bool, device=self.device).tril(diagonal=start)
        rows = visible_rows(mask, layout.mask is None) if self.exact_rows and n > 1 and start > 0 else None
        kept = {0: hidden[0]} if 0 in self.hidden_layers else {}  # layer count -> the residual stream after it
        for index, w in enumerate(self.layers):
            hidden = hidden + self._attend(w, rms_norm(hidden, *w.input_norm), index, start, n, cos, sin, mask, rows)
            normed = rms_norm(hidden, *w.post_norm)
            gate = w.act(linear(normed, w.gate))
            hidden = hidden + linear(gate * linear(normed, w.up), w.down)
            if index + 1 in self.hidden_layers:
                kept[index + 1] = hidden[0]
        return hidden[0], kept

    def _logits(self, rows: torch.Tensor) -> torch.Tensor:
        return linear(rows, self.head)

    def _attend(self, w, hidden, index, start, n, cos, sin, mask, rows):
        q = linear(hidden, w.q).view(1, n, -1, self.head_dim).transpose(1, 2)
        k = linear(hidden, w.k).view(1, n, -1, self.head_dim).transpose(1, 2)
        v = linear(hidden, w.v).view(1, n, -1, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        dtype, q = q.dtype, q.to(self.kv_dtype)
        self.keys[index][:, :, start : start + n] = k
        self.values[index][:, :, start : start + n] = v
        keys, values = self.keys[index][:, :, : start + n], self.values[index][:, :, : start + n]
        if rows is not None:  # each row over its own keys, unmasked: what a one-token forward computes
            out = torch.cat([self._sdpa(q[:, :, i : i + 1], _take(keys, seen), _take(values, seen), None)
                             for i, seen in enumerate(rows)], dim=2)
        else:
            out = self._sdpa(q, keys, values, mask)  # [1, h, n, hd]
        out = out.to(dtype).transpose(1, 2).reshape(1, n, -1)
        return linear(out, w.o)

    def _sdpa(self, q, keys, values, mask):
        # enable_gqa: query head h reads kv head h // groups in place, without repeat_kv's copy of the cache
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=self.scaling,
                                              enable_gqa=self.groups > 1)


def visible_rows(mask: torch.Tensor, causal: bool) -> list:
    """Per new token, the cache positions it attends to (mask [n, length], bool): a length for a causal
    chain (a prefix), else an index tensor (a tree node: the cache before the tree, its ancestors, itself,
    in position order, which is depth order)."""
    if causal:
        return [int(count) for count in mask.sum(dim=1).tolist()]
    return [row.nonzero().squeeze(1) for row in mask]


def _take(cache: torch.Tensor, seen) -> torch.Tensor:
    """cache [1, kv_heads, length, hd] -> the positions `seen` (a prefix length or an index tensor)."""
    return cache[:, :, :seen] if isinstance(seen, int) else cache.index_select(2, seen)


class LayerWeights(NamedTuple):
    input_norm: tuple  # (weight, eps)
    q: tuple  # (weight, bias or None), or a packed copy: Fp16Linear / Bf16Linear (packed_weights.py)
    k: tuple
    v: tuple
    o: tuple
    post_norm: tuple
    gate: tuple
    up: tuple
    down: tuple
    act: object


def layer_weights(layer, packed: bool = True) -> LayerWeights:
    """A layer's weights for `linear`: packed copies where they help (packed_weights.py), or (packed=False) the
    module's own (weight, bias)."""
    weights = linear_weights if packed else plain_weights
    attn, mlp = layer.self_attn, layer.mlp
    return LayerWeights(
        input_norm=(layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon),
        q=weights(attn.q_proj), k=weights(attn.k_proj), v=weights(attn.v_proj), o=weights(attn.o_proj),
        post_norm=(layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon),
        gate=weights(mlp.gate_proj), up=weights(mlp.up_proj), down=weights(mlp.down_proj),
        act=mlp.act_fn,
    )


def plain_weights(module: torch.nn.Linear) -> tuple:
    return module.weight, module.bias


def rms_norm(hidden: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' LlamaRMSNorm, op for op (its casts to and from float32 skipped where they change nothing: on
    a small model each op's dispatch costs more than its arithmetic)."""
    widened = hidden.dtype != torch.float32
    x = hidden.to(torch.float32) if widened else hidden
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight * (normed.to(hidden.dtype) if widened else normed)

