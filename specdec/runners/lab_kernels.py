"""The static runner on the lab's CPU kernels (native_kernels.py, specdec/runners/native/decode_kernels.c): a Llama-family
float32 model whose weights are all float16 values, its products streamed from float16 groups on every thread the
model's forwards run on, with RMSNorm, rotary, SiLU-gating, residual adds and the cache writes inside the same calls,
and attention row by row in C. It supplies the runner template's layers step and head product (static.py); the
cache, rollback, layout and kept hidden states are the template's.

Exactness: every product row and every attention row is the same whatever rows share the call (decode_kernels.c),
so a verification scores each token bit for bit as a one-token forward does: greedy speculation reproduces
target-only decoding exactly on this runner (torch's float32 SDPA is not row-exact; this is). Against torch's path
only the order of sums differs. Whether this runner is used is measured per machine (tuning.py: the `lab kernels`
candidates).
"""
from __future__ import annotations

import ctypes
import weakref
from typing import NamedTuple, Optional

from specdec.runners import block_weights, native_kernels, packed_weights
from specdec.runners.block_weights import BlockLinear, BlockMatrix
from specdec.runners.static import Layout, StaticLlamaRunner, layer_weights, plain_weights, supports_static

import torch
import torch.nn.functional as F

KIND = "lab kernels (float16 weights)"
# forwards of more rows (long prefills, never a verification) go through torch's float32 products on every thread the
# model runs on: compute-bound there, MKL's GEMM beats the kernels' row blocks (docs/engine.md, "Lab kernels")
LONG_ROWS = 384


class PackedLayer(NamedTuple):
    input_norm: tuple  # (weight [d], eps)
    qkv: torch.Tensor  # q, k, v stacked, packed: [(Nq + 2 Nkv) / GROUP, d, GROUP] float16
    qkv_bias: Optional[torch.Tensor]  # [Nq + 2 Nkv] or None
    o: torch.Tensor  # [d / GROUP, Nq, GROUP]
    o_bias: Optional[torch.Tensor]
    post_norm: tuple
    gated: torch.Tensor  # gate and up as a gated pair: [2 I / GROUP, d, GROUP]
    gated_bias: Optional[torch.Tensor]  # [2 I]: gate's then up's, or None
    down: torch.Tensor  # [d / GROUP, I, GROUP]
    down_bias: Optional[torch.Tensor]
    # None: the matrices above are float16 groups; else they are int8 rows (native_kernels.Int8Rows' values: a
    # drafter's own layer, packed_layer(int8=True)) and these their scales in packed group order, (qkv, o, gated, down)
    scales: Optional[tuple] = None
    # None: as above; else the matrices are a GGUF's blocks as tiles (block_weights.py), with these format codes
    # (qkv, o, gated, down): register_block_layer
    formats: Optional[tuple] = None


class PackedModel(NamedTuple):
    layers: list
    head: "torch.Tensor | BlockMatrix | None"  # float16 groups [V / GROUP, d, GROUP], the head's own blocks, or None:
    # a head the kernels cannot take, multiplied by torch (a drafter's few head rows over a target's block layers)
    nbytes: int  # the packed copies this model added (layers another model packed first are shared, not counted)


_PACKED: "weakref.WeakKeyDictionary[torch.nn.Module, PackedModel]" = weakref.WeakKeyDictionary()


_FITS: "weakref.WeakKeyDictionary[torch.nn.Module, str]" = weakref.WeakKeyDictionary()
_LAYER_FITS: "weakref.WeakKeyDictionary[torch.nn.Module, str]" = weakref.WeakKeyDictionary()

# each decoder layer's packed weights, shared by every model that holds the layer (a drafter running the target's first
# layers, as early exit does, reads the target's packed copies rather than making its own)
_PACKED_LAYERS: "weakref.WeakKeyDictionary[torch.nn.Module, PackedLayer]" = weakref.WeakKeyDictionary()
# a drafter's own layers as int8 rows (packed_layer(int8=True))
_PACKED_INT8_LAYERS: "weakref.WeakKeyDictionary[torch.nn.Module, PackedLayer]" = weakref.WeakKeyDictionary()
# a head's own products (EAGLE's fc, EAGLE-3's fuse): the packed weight, or None where it cannot be packed
_PACKED_LINEARS: "weakref.WeakKeyDictionary[torch.nn.Module, Optional[torch.Tensor]]" = weakref.WeakKeyDictionary()


def fits(model) -> str:
    """'' where this runner can run the model here, else why not (one line; checked once per model)."""
    reason = native_kernels.unavailable_reason()
    if reason:
        return reason
    if model not in _FITS:
        _FITS[model] = _misfit(model)
    return _FITS[model]


def _misfit(model) -> str:
    if not supports_static(model) or next(model.parameters()).dtype != torch.float32:
        return "lab kernels: float32 Llama-family models only"
    if next(model.parameters()).device.type != "cpu":
        return "lab kernels: CPU only"
    if getattr(model.config, "hidden_act", "silu") != "silu" or model.lm_head.bias is not None:
        return "lab kernels: SiLU-gated MLPs only"
    head = model.lm_head
    if not (block_weights.fits_kernels(head.matrix) if isinstance(head, BlockLinear)
            else native_kernels.packable(head.weight)):
        return UNPACKABLE.format(native_kernels.group())
    return next(filter(None, (layer_misfit(layer) for layer in model.model.layers)), "")


UNPACKABLE = "lab kernels: needs weights that are float16 values, in matrices of multiples of {} rows"


def layer_misfit(layer) -> str:
    """'' where the kernels can run this decoder layer (float32 weights that are float16 values, a head size of
    whole vectors), else why not; checked once per layer (reading every weight takes milliseconds, and a drafter
    asks at every run's start). A drafter's own layers (EAGLE heads) are checked one by one."""
    if layer not in _LAYER_FITS:
        _LAYER_FITS[layer] = _layer_misfit(layer)
    return _LAYER_FITS[layer]


def _layer_misfit(layer) -> str:
    attn, mlp = layer.self_attn, layer.mlp
    if attn.head_dim % native_kernels.lanes():
        return f"lab kernels: head size {attn.head_dim} is not a multiple of {native_kernels.lanes()}"
    known = _PACKED_LAYERS.get(layer)
    if known is not None and known.formats is not None:
        return ""  # a GGUF's blocks, tiled for the kernels when the model was built (register_block_layer)
    if getattr(getattr(mlp, "config", None), "hidden_act", "silu") != "silu":
        return "lab kernels: SiLU-gated MLPs only"
    stacks = [(attn.q_proj, attn.k_proj, attn.v_proj), (attn.o_proj,), (mlp.gate_proj,), (mlp.up_proj,),
              (mlp.down_proj,)]
    if not all(native_kernels.packable(*(module.weight for module in stack)) for stack in stacks):
        return UNPACKABLE.format(native_kernels.group())
    return ""


def packed_model(model) -> PackedModel:
    """The model's packed weights, made once per model and shared by all its runners."""
    known = _PACKED.get(model)
    if known is None:
        made = [layer not in _PACKED_LAYERS for layer in model.model.layers]  # the layers this model packs first
        layers = [packed_layer(layer) for layer in model.model.layers]
        blocks = isinstance(model.lm_head, BlockLinear)  # the head's own blocks: no copy
        packable = not blocks and native_kernels.packable(model.lm_head.weight)
        head = model.lm_head.matrix if blocks else native_kernels.pack(model.lm_head.weight) if packable else None
        nbytes = (head.numel() * head.element_size() if packable else 0) + sum(
            packed_layer_bytes(layer) for layer, new in zip(model.model.layers, made) if new)
        known = _PACKED[model] = PackedModel(layers, head, nbytes)
        packed_weights.remember_module_copy(model, known.nbytes, kind(model))
    return known


def kind(model) -> str:
    """The runner label's words for the model's weights on the kernels: 'lab kernels (float16 weights)', or
    'lab kernels (Q4_1 + Q8_0 blocks)' for a GGUF's blocks."""
    formats = block_weights.block_formats(model)
    return f"lab kernels ({' + '.join(formats)} blocks)" if formats else KIND


def register_block_layer(layer, qkv: BlockMatrix, o: BlockMatrix, gated: BlockMatrix, down: BlockMatrix) -> None:
    """A decoder layer whose products are a GGUF's blocks (specdec/models/block_model.py): its packed layer, shared
    by every model that holds the layer (an early exit over the target's first layers), made once at load."""
    matrices = (qkv, o, gated, down)
    if any(not block_weights.fits_kernels(m) for m in matrices):
        raise ValueError(f"lab kernels: block matrices need rows in multiples of {native_kernels.group()}")
    _PACKED_LAYERS[layer] = PackedLayer(
        input_norm=(layer.input_layernorm.weight.detach(), layer.input_layernorm.variance_epsilon),
        qkv=qkv.contiguous_tiles(), qkv_bias=None, o=o.contiguous_tiles(), o_bias=None,
        post_norm=(layer.post_attention_layernorm.weight.detach(), layer.post_attention_layernorm.variance_epsilon),
        gated=gated.contiguous_tiles(), gated_bias=None, down=down.contiguous_tiles(), down_bias=None,
        formats=tuple(m.code for m in matrices))


def packed_layer(layer, int8: bool = False) -> PackedLayer:
    """The decoder layer's packed weights, made once per layer and shared by every model that holds it; int8: as
    int8 rows (a drafter's own layer, bound by memory when it drafts: half the bytes; its outputs need not be exact)."""
    made = _PACKED_INT8_LAYERS if int8 else _PACKED_LAYERS
    known = made.get(layer)
    if known is None:
        known = made[layer] = _pack_layer(layer, int8)
    return known


def int8_misfit(layer) -> str:
    """'' where the layer can also run as int8 rows (every product's input width even), else why not."""
    attn, mlp = layer.self_attn, layer.mlp
    widths = (attn.q_proj.in_features, attn.o_proj.in_features, mlp.gate_proj.in_features, mlp.down_proj.in_features)
    return "" if all(width % 2 == 0 for width in widths) else "lab kernels: int8 rows need even input widths"


def packed_layer_bytes(layer) -> int:
    """Bytes of the layer's packed weights (float16 and int8 copies), 0 where none were made."""
    total = 0
    for made in (_PACKED_LAYERS, _PACKED_INT8_LAYERS):
        known = made.get(layer)
        if known is not None and known.formats is None:  # a GGUF's blocks are the layer's own weights, not a copy
            tensors = (known.qkv, known.o, known.gated, known.down) + tuple(known.scales or ())
            total += sum(t.numel() * t.element_size() for t in tensors)
    return total


def packed_linear(module: torch.nn.Linear) -> Optional[torch.Tensor]:
    """A linear layer's weight packed for native_kernels.product ([out / GROUP, in, GROUP] float16), made once per
    module; None where it cannot be packed (native_kernels.packable)."""
    if module not in _PACKED_LINEARS:
        weight = module.weight.detach()
        _PACKED_LINEARS[module] = native_kernels.pack(weight) if native_kernels.packable(weight) else None
    return _PACKED_LINEARS[module]


def packed_linear_bytes(module: torch.nn.Module) -> int:
    """Bytes of the packed copies made of the module's linear layers (packed_linear), 0 where none were made."""
    copies = [_PACKED_LINEARS.get(m) for m in module.modules() if isinstance(m, torch.nn.Linear)]
    return sum(c.numel() * c.element_size() for c in copies if c is not None)


def forget(model) -> None:
    """Drop the model's packed weights, its layers' included (made again by the next runner)."""
    if _PACKED.pop(model, None) is not None:
        for layer in model.model.layers:
            _PACKED_LAYERS.pop(layer, None)
    packed_weights.forget_module_copy(model)


def _bias(*modules) -> Optional[torch.Tensor]:
    biases = [m.bias for m in modules]
    if all(b is None for b in biases):
        return None
    return torch.cat([b.detach() if b is not None else torch.zeros(m.weight.shape[0]) for m, b in zip(modules, biases)])


def _pack_layer(layer, int8: bool = False) -> PackedLayer:
    attn, mlp = layer.self_attn, layer.mlp
    qkv = (attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight)
    if int8:
        packed = (native_kernels.pack_int8(torch.cat([w.detach() for w in qkv])),
                  native_kernels.pack_int8(attn.o_proj.weight),
                  native_kernels.pack_gated_int8(mlp.gate_proj.weight, mlp.up_proj.weight),
                  native_kernels.pack_int8(mlp.down_proj.weight))
        matrices, scales = [rows.values for rows in packed], tuple(rows.scales for rows in packed)
    else:
        matrices = [native_kernels.pack(*qkv), native_kernels.pack(attn.o_proj.weight),
                    native_kernels.pack_gated(mlp.gate_proj.weight, mlp.up_proj.weight),
                    native_kernels.pack(mlp.down_proj.weight)]
        scales = None
    return PackedLayer(
        input_norm=(layer.input_layernorm.weight.detach(), layer.input_layernorm.variance_epsilon),
        qkv=matrices[0], qkv_bias=_bias(attn.q_proj, attn.k_proj, attn.v_proj),
        o=matrices[1], o_bias=_bias(attn.o_proj),
        post_norm=(layer.post_attention_layernorm.weight.detach(), layer.post_attention_layernorm.variance_epsilon),
        gated=matrices[2], gated_bias=_bias(mlp.gate_proj, mlp.up_proj),
        down=matrices[3], down_bias=_bias(mlp.down_proj), scales=scales,
    )


def _ptr(tensor: Optional[torch.Tensor]) -> Optional[int]:
    return tensor.data_ptr() if tensor is not None else None


def c_layer(w: PackedLayer, keys: torch.Tensor, values: torch.Tensor) -> native_kernels.Layer:
    """The layer's weights and one sequence's cache ([kv_heads, cache_len, head_dim] each) as the addresses the
    kernels read (the tensors must outlive it)."""
    layer = native_kernels.Layer(w.input_norm[0].data_ptr(), w.input_norm[1], w.qkv.data_ptr(), _ptr(w.qkv_bias),
                                 w.o.data_ptr(), _ptr(w.o_bias), w.post_norm[0].data_ptr(), w.post_norm[1],
                                 w.gated.data_ptr(), _ptr(w.gated_bias), w.down.data_ptr(), _ptr(w.down_bias),
                                 keys.data_ptr(), values.data_ptr())
    if w.scales is not None:
        layer.qkv_scales, layer.o_scales, layer.gated_scales, layer.down_scales = (t.data_ptr() for t in w.scales)
    if w.formats is not None:
        layer.qkv_format, layer.o_format, layer.gated_format, layer.down_format = w.formats
    return layer


class LabKernelRunner(StaticLlamaRunner):
    """The template's layers and head's product on the lab's kernels; forwards of more than LONG_ROWS rows take
    StaticLlamaRunner's (on torch, into the same cache)."""

    _threads = 0  # during a call: the kernels' thread count; 0: the call runs on torch's layers and head

    def _prepare_weights(self, model) -> None:
        # long forwards on torch's float32 products; a model with a GGUF's blocks has no float weights for them and
        # runs every forward on the kernels
        self.long_rows = float("inf") if block_weights.has_blocks(model) else LONG_ROWS
        if self.long_rows == LONG_ROWS:
            self.layers = [layer_weights(layer, packed=False) for layer in model.model.layers]
            self.head = plain_weights(model.lm_head)
        self.packed = packed_model(model)
        self.lm_head = model.lm_head
        self.lib = native_kernels.library()
        config = model.config
        self.width = config.hidden_size
        # every layer's weights and this runner's cache, as addresses the kernels read (the tensors live as long as
        # self.packed and self.keys / self.values)
        self.c_layers = (native_kernels.Layer * len(self.packed.layers))(*[
            c_layer(w, keys, values) for w, keys, values in zip(self.packed.layers, self.keys, self.values)])
        self.c_shape = native_kernels.Shape(self.width, self.heads, self.kv_heads, self.head_dim,
                                            config.intermediate_size, self.max_length, self.scaling)

    @torch.inference_mode()
    def _call(self, ids: list[int], last_only: bool) -> torch.Tensor:
        # the model's count (threads_for_model) for the kernels; 0: a long forward, on torch's layers and head
        self._threads = torch.get_num_threads() if len(ids) <= self.long_rows else 0
        if not self._threads:
            return super()._call(ids, last_only)
        torch.set_num_threads(1)  # the few torch ops around the kernel calls (embedding, final norm) on this thread
        try:
            return super()._call(ids, last_only)
        finally:
            torch.set_num_threads(self._threads)

    def _layers(self, hidden: torch.Tensor, layout: Layout) -> tuple[torch.Tensor, dict]:
        if not self._threads:
            return super()._layers(hidden, layout)  # the same cache, torch's products (module constant above)
        n, start = layout.n, layout.start
        cos, sin = layout.cos.contiguous(), layout.sin.contiguous()  # [n, head_dim]
        visible = layout.mask.to(torch.uint8).contiguous() if layout.mask is not None else None  # None: a chain
        # the residual stream after each layer in self.hidden_layers (0: the embeddings, copied before the kernels
        # write the layers' outputs over `hidden`)
        kept = {layer: hidden.clone() if layer == 0 else torch.empty(n, self.width) for layer in self.hidden_layers}
        wanted = (ctypes.c_void_p * (len(self.c_layers) + 1))(
            *[kept[layer].data_ptr() if layer in kept else None for layer in range(len(self.c_layers) + 1)]
        ) if kept else None
        if self.lib.sd_layers(self.c_layers, len(self.c_layers), ctypes.byref(self.c_shape), hidden.data_ptr(), n,
                              start, cos.data_ptr(), sin.data_ptr(), _ptr(visible), wanted, self._threads):
            raise MemoryError("the lab kernels could not allocate their scratch for this forward")
        return hidden, kept

    def _logits(self, rows: torch.Tensor) -> torch.Tensor:
        if not self._threads:
            return super()._logits(rows)
        if isinstance(self.packed.head, BlockMatrix):
            return block_weights.product(rows, self.packed.head, self._threads)
        if self.packed.head is None:
            return F.linear(rows, self.lm_head.weight, self.lm_head.bias)
        return native_kernels.product(rows, self.packed.head, self._threads)
