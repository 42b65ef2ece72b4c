"""A head's decoder layers on the lab kernels (specdec/runners/lab_kernels.py): the drafting cache of an EAGLE head
(heads.LayerCache's interface) whose layers run in one `sd_layers` call, on the threads the target's forwards of
as many rows run on.

Why: a drafting step runs its torch ops on one thread (threads.step_threads), and a head's layer through torch is
~20 small ops and seven one-thread products per drafted token; on the target's kernels the products stream on both
cores and the small ops run inside the same call. The layers' matrices are int8 rows there (lab_kernels.packed_layer
with int8: half float16's bytes, for a forward of one drafted token that reads the whole layer and is bound by
memory), where every product's input width is even. Used where the target runs on the lab kernels (its measured path)
and the head's layers fit them (lab_kernels.layer_misfit); otherwise LayerCache.

An EAGLE-3 layer ("concat" input, heads.EagleHead) projects [input_layernorm(embedding); hidden_norm(feature)] and
adds its attention output to the feature: the two norms and their concatenation run here in torch, and the kernels'
layer takes them as its given input (decode_kernels.c, layer_t.given_input) with the feature as its residual stream.
A drafter's numbers need not match torch's bit for bit (the target verifies every draft); its q rows are the ones it
drafted from.
"""
from __future__ import annotations

import ctypes
from typing import Callable

from specdec.drafters.heads import LayerCache, module_product, shared_rope_tables
from specdec.runners import lab_kernels, native_kernels
from specdec.runners.static import rms_norm

import torch


def layer_cache(layers, config, max_length: int, dtype: torch.dtype, kernels: str,
                threads: Callable[[int], int]):
    """The drafting cache for these layers: on the lab kernels where the target runs on them and the layers fit,
    else heads.LayerCache. threads(rows): the kernels' thread count for a call of that many rows."""
    layers = list(layers)
    if kernels == "lab" and dtype == torch.float32 and native_kernels.available() and \
            not any(lab_kernels.layer_misfit(layer) for layer in layers):
        return LabLayerCache(layers, config, max_length, threads)
    return LayerCache(layers, config, max_length, dtype)


def lab_product(threads: Callable[[int], int]):
    """A head's product(module, hidden) (EagleHead.use_product) on the lab kernels for linear layers that pack
    (lab_kernels.packed_linear), on threads(rows) threads, when drafting; else heads.module_product (training, with
    autograd on, goes through the module there)."""
    def product(module, hidden: torch.Tensor) -> torch.Tensor:
        packed = lab_kernels.packed_linear(module)
        if packed is None or torch.is_grad_enabled():
            return module_product(module, hidden)
        rows = hidden.reshape(-1, hidden.shape[-1])  # [n, in]
        out = native_kernels.product(rows, packed, threads(rows.shape[0]))  # [n, out]
        if module.bias is not None:
            out += module.bias
        return out.view(*hidden.shape[:-1], out.shape[-1])
    return product


class LabLayerCache:
    """A static KV cache for a head's decoder layers of one sequence, its forwards on the lab kernels."""

    def __init__(self, layers, config, max_length: int, threads: Callable[[int], int]):
        self.layers = list(layers)
        attn = self.layers[0].self_attn
        kv_heads = config.num_key_value_heads
        self.keys = [torch.zeros(kv_heads, max_length, attn.head_dim) for _ in self.layers]  # [kv_heads, slots, hd]
        self.values = [torch.zeros(kv_heads, max_length, attn.head_dim) for _ in self.layers]
        self.cos, self.sin = shared_rope_tables(config, max_length, torch.float32)  # [max_length, head_dim]
        self.max_length, self.length = max_length, 0
        self.threads = threads
        # int8 rows where they fit: a drafted token reads the whole layer, bound by memory (made once per layer)
        int8 = not any(lab_kernels.int8_misfit(layer) for layer in self.layers)
        self.packed = [lab_kernels.packed_layer(layer, int8=int8) for layer in self.layers]
        self.c_layers = (native_kernels.Layer * len(self.layers))(*[
            lab_kernels.c_layer(w, keys, values) for w, keys, values in zip(self.packed, self.keys, self.values)])
        self.c_shape = native_kernels.Shape(config.hidden_size, config.num_attention_heads, kv_heads, attn.head_dim,
                                            self.layers[0].mlp.gate_proj.out_features, max_length, attn.scaling)
        self.hidden_norm = getattr(self.layers[0], "hidden_norm", None)  # EAGLE-3's concat input
        self.lib = native_kernels.library()

    def bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)

    @torch.inference_mode()
    def forward(self, hidden: torch.Tensor, positions: list[int] | None = None,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """hidden [n, d] ([n, 2d]: [embedding; feature] for a concat layer) into cache slots length .. length+n-1 ->
        outputs [n, d]; appends to the cache. A chain by default (slot = rotary position, causal); a tree draft
        passes positions [n] (rotary positions) and mask [n, length + n] (the slots each new slot sees)."""
        n, start = hidden.shape[0], self.length
        if start + n > self.max_length:
            raise RuntimeError("drafter cache is full")
        rows = slice(start, start + n) if positions is None else positions
        cos, sin = self.cos[rows].contiguous(), self.sin[rows].contiguous()  # [n, head_dim]
        visible = mask.to(torch.uint8).contiguous() if mask is not None else None  # None: causal
        given = None
        if self.hidden_norm is not None:
            embedding, stream = hidden.float().chunk(2, dim=-1)
            given = torch.cat([rms_norm(embedding, *self.packed[0].input_norm),
                               rms_norm(stream, self.hidden_norm.weight, self.hidden_norm.variance_epsilon)], dim=-1)
            given = given.contiguous()  # [n, 2d]
            self.c_layers[0].given_input, self.c_layers[0].given_width = given.data_ptr(), given.shape[1]
        else:
            stream = hidden.float()
        stream = stream.contiguous().clone()  # [n, d]: the kernels write the layers' outputs over it
        if self.lib.sd_layers(self.c_layers, len(self.c_layers), ctypes.byref(self.c_shape), stream.data_ptr(), n,
                              start, cos.data_ptr(), sin.data_ptr(),
                              visible.data_ptr() if visible is not None else None, None, self.threads(n)):
            raise MemoryError("the lab kernels could not allocate their scratch for this draft")
        self.length += n
        return stream

