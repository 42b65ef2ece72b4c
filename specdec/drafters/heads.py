"""The trained parts of the zoo as torch modules, and a functional Llama decoder layer shared by
training (whole sequences) and drafting (one sequence, a small static KV cache).

  EagleHead    (feature, embedding of the next token) -> decoder layer(s) -> next feature; the target's
               head rows of the draft vocabulary read norm(feature) as logits. The feature is the target's
               final-norm state (EAGLE) or, with feature_layers, a fusion of several of its layers' outputs,
               each RMS-normalised, by one fc (EAGLE-3). Two ways in (input_layout): "fc" reads
               fc([feature; 14 x embedding]); "concat" is EAGLE-3's reference layer (vLLM's llama_eagle3),
               attention over [RMSNorm(embedding); RMSNorm(feature)] with the feature as the residual
  MedusaHeads  n residual blocks on the target's final-norm feature; head k predicts the token k + 1
               places after the one the feature predicts, through the same draft-vocabulary head rows
The draft model and the early-exit adapter are plain Llama decoder layers (see build.py).
"""
from __future__ import annotations

import copy
import functools

from specdec.runners.packed_weights import linear, linear_weights, prepared
from specdec.runners.static import LayerWeights, attention_dtype, layer_weights, rms_norm

import torch
import torch.nn.functional as F
from torch import nn
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRMSNorm, apply_rotary_pos_emb


def rope_tables(config, length: int, dtype, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [length, head_dim] of the target's rotary embedding (default rope)."""
    return _rope_rows(*_rope_parameters(config), length, dtype, device)


def shared_rope_tables(config, length: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """rope_tables on the CPU, computed once per (head_dim, theta, length, dtype) and shared, read-only, by the drafting
    caches made after (a run makes a fresh one, and on a small head computing the tables costs more than a draft step)."""
    return _shared_rope_rows(*_rope_parameters(config), length, dtype)


def _rope_parameters(config) -> tuple:
    """(head_dim, rope theta) of a Llama-family config."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    theta = getattr(config, "rope_theta", None)
    if theta is None:
        theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    return head_dim, theta


def _rope_rows(head_dim: int, theta, length: int, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim))
    freqs = torch.arange(length, dtype=torch.float32, device=device)[:, None] * inv[None]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


@functools.lru_cache(maxsize=16)
def _shared_rope_rows(head_dim: int, theta, length: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    return _rope_rows(head_dim, theta, length, dtype, "cpu")


def unit_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x [..., d] over its root mean square: an RMSNorm without a weight (EAGLE-3's fused layer states)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _project(layer: LlamaDecoderLayer, w: LayerWeights, hidden: torch.Tensor, cos, sin):
    """q, k, v [B, heads, T, hd] with rotary applied (cos, sin: [B or 1, T, hd])."""
    b, t, _ = hidden.shape
    hd = layer.self_attn.head_dim
    q = linear(hidden, w.q).view(b, t, -1, hd).transpose(1, 2)
    k = linear(hidden, w.k).view(b, t, -1, hd).transpose(1, 2)
    v = linear(hidden, w.v).view(b, t, -1, hd).transpose(1, 2)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return q, k, v


def _mlp(w: LayerWeights, hidden: torch.Tensor) -> torch.Tensor:
    normed = rms_norm(hidden, *w.post_norm)
    return hidden + linear(w.act(linear(normed, w.gate)) * linear(normed, w.up), w.down)


def _weights(layer: LlamaDecoderLayer) -> LayerWeights:
    """The layer's weights as `linear` takes them: under autograd (training) the parameters themselves, else their
    packed copies where one helps (packed_weights.py), resolved on every call (LayerCache resolves them once)."""
    return layer_weights(layer, packed=not torch.is_grad_enabled())


def module_product(module: nn.Linear, hidden: torch.Tensor) -> torch.Tensor:
    """The module's product; when drafting (no autograd), through its packed copy where one exists
    (packed_weights.py: oneDNN-packed bfloat16 on a CPU that computes bf16 natively)."""
    if torch.is_grad_enabled():
        return module(hidden)
    return linear(hidden, linear_weights(module))


def _expand_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def _attention_input(layer: LlamaDecoderLayer, w: LayerWeights, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(what the attention projects, what its output is added to). A plain layer: (RMSNorm(hidden), hidden).
    A layer with a hidden_norm (EagleHead's "concat" input) reads hidden = [embedding; feature] [..., 2d], as
    vLLM's llama_eagle3 layer 0: ([input_layernorm(embedding); hidden_norm(feature)] [..., 2d], feature [..., d])."""
    if not hasattr(layer, "hidden_norm"):
        return rms_norm(hidden, *w.input_norm), hidden
    embedding, feature = hidden.chunk(2, dim=-1)
    feature_norm = layer.hidden_norm
    return torch.cat([rms_norm(embedding, *w.input_norm),
                      rms_norm(feature, feature_norm.weight, feature_norm.variance_epsilon)], dim=-1), feature


def layer_forward(layer: LlamaDecoderLayer, hidden: torch.Tensor, cos, sin, return_kv: bool = False):
    """A causal decoder layer over whole sequences [B, T, d] (training); optionally also its (k, v)."""
    w = _weights(layer)
    normed, residual = _attention_input(layer, w, hidden)
    q, k, v = _project(layer, w, normed, cos, sin)
    groups = q.shape[1] // k.shape[1]
    out = F.scaled_dot_product_attention(q, _expand_kv(k, groups), _expand_kv(v, groups), is_causal=True,
                                         scale=layer.self_attn.scaling)
    out = out.transpose(1, 2).reshape(hidden.shape[0], hidden.shape[1], -1)
    out = _mlp(w, residual + linear(out, w.o))
    return (out, (k, v)) if return_kv else out


def layer_forward_unrolled(layer, hidden: torch.Tensor, cos_sin_by_depth, base_kv, chain_kv):
    """Depth j > 0 of training-time test (EAGLE-3): row p of `hidden` sits at position p + j and sees
    the depth-0 keys of positions <= p (true features) and the depth-1..j keys of row p (its own chain).

    base_kv: (k0, v0) [B, kvh, T, hd]; chain_kv: list of (k_i, v_i) for depths 1..j-1; returns
    (output [B, T, d], (k_j, v_j)).
    """
    cos, sin = cos_sin_by_depth
    w = _weights(layer)
    normed, residual = _attention_input(layer, w, hidden)
    q, k, v = _project(layer, w, normed, cos, sin)
    groups = q.shape[1] // k.shape[1]
    scale = layer.self_attn.scaling
    k0, v0 = (_expand_kv(x, groups) for x in base_kv)
    t = hidden.shape[1]
    scores0 = torch.matmul(q, k0.transpose(-1, -2)) * scale  # [B, h, T, T]
    causal = torch.ones(t, t, dtype=torch.bool, device=hidden.device).tril()
    scores0 = scores0.masked_fill(~causal, float("-inf"))
    chain = list(chain_kv) + [(k, v)]
    diag = [(q * _expand_kv(ki, groups)).sum(-1, keepdim=True) * scale for ki, _ in chain]  # [B, h, T, 1]
    scores = torch.cat([scores0] + diag, dim=-1).float().softmax(-1).to(q.dtype)
    out = torch.matmul(scores[..., :t], v0)
    for i, (_, vi) in enumerate(chain):
        out = out + scores[..., t + i : t + i + 1] * _expand_kv(vi, groups)
    out = out.transpose(1, 2).reshape(hidden.shape[0], t, -1)
    return _mlp(w, residual + linear(out, w.o)), (k, v)


class EagleHead(nn.Module):
    """(feature, next token's embedding) -> n decoder layers -> the next feature, read by the target's head rows
    through `norm`. What the head feeds itself at the next draft step is the layers' output before `norm`.

    input_layout "fc" (EAGLE): fc([feature; EMB_SCALE * embedding]) is the layers' input and residual; `norm` is
    the identity. SmolLM2's final-norm features have RMS ~1.9 and its embeddings ~0.14: EMB_SCALE puts the two
    inputs on one scale, so the token is not drowned out at the start.
    input_layout "concat" (EAGLE-3's reference layer, vLLM's llama_eagle3 layer 0; one layer): the attention
    projects [input_layernorm(embedding); hidden_norm(feature)] (2d wide) and its output is added to the feature
    itself; `norm` is an RMSNorm before the head rows, as the target's final norm. This head is what vLLM's
    eagle3 method runs, weight for weight (specdec/vllm/export_eagle3.py).

    feature_layers (EAGLE-3): the true feature of a position is fused from the target's residual stream after
    those layers, fuse([rms(h_a); rms(h_b); ...]) (fused()); the head's own outputs replace it at later draft
    steps, as in EAGLE-3. Each layer's state is RMS-normalised first because SmolLM2's residual stream grows
    by an order of magnitude over its depth and carries outliers of ~10^4 (docs/zoo.md, "EAGLE-3").
    intermediate_size: the decoder layer's MLP width (default: the target's)."""

    EMB_SCALE = 14.0
    INPUT_LAYOUTS = ("fc", "concat")

    def __init__(self, config, n_layers: int = 1, feature_layers: tuple[int, ...] = (),
                 intermediate_size: int | None = None, input_layout: str = "fc"):
        super().__init__()
        if input_layout not in self.INPUT_LAYOUTS:
            raise ValueError(f"input_layout must be one of {self.INPUT_LAYOUTS}, not {input_layout!r}")
        if input_layout == "concat" and n_layers != 1:
            raise ValueError("the concat input layout has one decoder layer (vLLM's eagle3 layer 0)")
        d = config.hidden_size
        self.config = config
        self.feature_layers = tuple(feature_layers)
        self.intermediate_size = intermediate_size
        layer_config = config
        if intermediate_size is not None:
            layer_config = copy.copy(config)
            layer_config.intermediate_size = intermediate_size
        self.fc = nn.Linear(2 * d, d, bias=False) if input_layout == "fc" else None
        self.layers = nn.ModuleList(LlamaDecoderLayer(layer_config, layer_idx=i) for i in range(n_layers))
        if input_layout == "fc":
            self.norm = nn.Identity()
        else:
            attn = self.layers[0].self_attn
            for name in ("q_proj", "k_proj", "v_proj"):
                setattr(attn, name, nn.Linear(2 * d, getattr(attn, name).out_features, bias=False))
            self.layers[0].hidden_norm = LlamaRMSNorm(d, eps=config.rms_norm_eps)
            self.norm = LlamaRMSNorm(d, eps=config.rms_norm_eps)
        self.fuse = nn.Linear(len(self.feature_layers) * d, d, bias=False) if self.feature_layers else None
        self.product = module_product  # (module, hidden) -> fuse's and fc's products when drafting; see use_product

    def use_product(self, product) -> None:
        """Compute fuse and fc through product(module, hidden) (a drafter's kernels: lab_layer_cache.lab_product), which
        goes through the module itself while autograd is on (training), as module_product does."""
        self.product = product

    def init_identity(self, seed: int = 0, final_norm_weight: torch.Tensor | None = None) -> None:
        """Start as 'the next feature is this feature': the layers' output projections are zero, so they add
        nothing at first, and the feature reaches the head rows as it came (fc: passed through, plus a little of
        the embedding; concat: it is the residual). A fusing head starts from the highest layer's state through
        the target's final norm (its logit lens): in fuse (fc) or in `norm` (concat)."""
        d = self.config.hidden_size
        g = torch.Generator().manual_seed(seed)
        high = torch.ones(d) if final_norm_weight is None else final_norm_weight.float()
        with torch.no_grad():
            for layer in self.layers:
                for module in layer.modules():
                    if isinstance(module, nn.Linear):
                        module.weight.copy_(torch.randn(module.weight.shape, generator=g) * 0.02)
                layer.self_attn.o_proj.weight.zero_()
                layer.mlp.down_proj.weight.zero_()
            if self.fc is not None:
                self.fc.weight.copy_(torch.randn(self.fc.weight.shape, generator=g) * 0.02)
                self.fc.weight[:, :d] = torch.eye(d)
            if self.fuse is not None:
                self.fuse.weight.copy_(torch.randn(self.fuse.weight.shape, generator=g) * 0.02)
                self.fuse.weight[:, -d:] = torch.diag(high) if self.fc is not None else torch.eye(d)
            if self.fc is None and self.fuse is not None:
                self.norm.weight.copy_(high)

    def normed(self, features: torch.Tensor) -> torch.Tensor:
        """`norm` of the layers' output, what the head rows read: LlamaRMSNorm's ops in fewer torch calls when
        drafting (static.rms_norm; the same numbers)."""
        if isinstance(self.norm, LlamaRMSNorm) and not torch.is_grad_enabled():
            return rms_norm(features, self.norm.weight, self.norm.variance_epsilon)
        return self.norm(features)

    def fused(self, states: torch.Tensor) -> torch.Tensor:
        """The head's feature from what the target gave: [..., d] final-norm states as they are, or
        [..., m * d] layer outputs (feature_layers) -> fuse(each RMS-normalised) [..., d]."""
        if self.fuse is None:
            return states
        parts = unit_rms(states.unflatten(-1, (len(self.feature_layers), -1)).float(), self.config.rms_norm_eps)
        return self.product(self.fuse, parts.flatten(-2).to(self.fuse.weight.dtype))

    def inputs(self, features: torch.Tensor, token_embeddings: torch.Tensor) -> torch.Tensor:
        """features, token_embeddings [..., d] -> the layers' input: fc's [..., d], or concat's [embedding;
        feature] [..., 2d] (split again by the layer, _attention_input)."""
        if self.fc is None:
            return torch.cat([token_embeddings.to(features.dtype), features], dim=-1)
        return self.product(self.fc, torch.cat([features, token_embeddings * self.EMB_SCALE], dim=-1))

    def forward_sequences(self, x: torch.Tensor, cos, sin, return_kv: bool = False):
        """Training and teacher-forced use: inputs [B, T, d or 2d] -> predicted features [B, T, d], before `norm`
        (and each layer's (k, v), for the unrolled depths)."""
        kvs = []
        for layer in self.layers:
            x, kv = layer_forward(layer, x, cos, sin, return_kv=True)
            kvs.append(kv)
        return (x, kvs) if return_kv else x

    def forward_unrolled(self, x: torch.Tensor, cos_sin_by_depth, base_kvs, chain_kvs):
        """Depth j > 0 of training-time test through every layer (layer_forward_unrolled); chain_kvs[i]
        holds layer i's (k, v) of depths 1..j-1. Returns (predicted features before `norm`, each layer's (k_j, v_j))."""
        kvs = []
        for layer, base, chain in zip(self.layers, base_kvs, chain_kvs):
            x, kv = layer_forward_unrolled(layer, x, cos_sin_by_depth, base, chain)
            kvs.append(kv)
        return x, kvs


def load_eagle_state(state: dict) -> dict:
    """Weights saved by a one-layer head (keys 'layer.*') under the current names ('layers.0.*')."""
    return {("layers.0." + k[len("layer."):] if k.startswith("layer.") else k): v for k, v in state.items()}


class ResBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.linear = nn.Linear(d, d)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, x):
        return x + F.silu(module_product(self.linear, x))


class MedusaHeads(nn.Module):
    def __init__(self, config, n_heads: int = 4):
        super().__init__()
        self.blocks = nn.ModuleList(ResBlock(config.hidden_size) for _ in range(n_heads))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """features [..., d] -> [..., n_heads, d] (then the head rows)."""
        return torch.stack([block(features) for block in self.blocks], dim=-2)


class LayerCache:
    """A static KV cache for a few decoder layers of one sequence (drafting)."""

    def __init__(self, layers, config, max_length: int, dtype):
        self.layers = list(layers)
        attn = self.layers[0].self_attn
        kvh = config.num_key_value_heads
        self.head_dim = attn.head_dim
        self.groups = config.num_attention_heads // kvh
        shape = (1, kvh, max_length, self.head_dim)
        self.kv_dtype = attention_dtype(dtype, torch.device("cpu"))
        self.keys = [torch.zeros(shape, dtype=self.kv_dtype) for _ in self.layers]
        self.values = [torch.zeros(shape, dtype=self.kv_dtype) for _ in self.layers]
        self.cos, self.sin = shared_rope_tables(config, max_length, dtype)  # [max_length, head_dim], read-only
        self.max_length = max_length
        self.length = 0
        # the layers' packed weights, resolved once per model and reused by every run's cache while they hold
        self.weights = [prepared(layer, "drafting", lambda layer=layer: layer_weights(layer)) for layer in self.layers]

    def bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)

    @torch.inference_mode()
    def forward(self, hidden: torch.Tensor, positions: list[int] | None = None,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """hidden [n, d] into cache slots length .. length+n-1 -> outputs [n, d]; appends to the cache.
        A chain by default (slot = rotary position, causal); a tree draft passes positions [n] (rotary
        positions) and mask [n, length + n] (bool: the slots each new slot sees, its ancestors')."""
        n, start = hidden.shape[0], self.length
        if start + n > self.max_length:
            raise RuntimeError("drafter cache is full")
        hidden = hidden[None]
        if positions is None:
            cos, sin = self.cos[None, start:start + n], self.sin[None, start:start + n]
        else:
            cos, sin = self.cos[None, positions], self.sin[None, positions]
        if mask is None and n > 1:
            mask = torch.ones(n, start + n, dtype=torch.bool).tril(diagonal=start)
        for i, (layer, w) in enumerate(zip(self.layers, self.weights)):
            normed, residual = _attention_input(layer, w, hidden)
            q, k, v = _project(layer, w, normed, cos, sin)
            self.keys[i][:, :, start:start + n] = k
            self.values[i][:, :, start:start + n] = v
            keys, values = self.keys[i][:, :, :start + n], self.values[i][:, :, :start + n]
            out = F.scaled_dot_product_attention(q.to(self.kv_dtype), keys, values, attn_mask=mask,
                                                 scale=layer.self_attn.scaling, enable_gqa=self.groups > 1)
            out = out.to(q.dtype).transpose(1, 2).reshape(1, n, -1)
            hidden = _mlp(w, residual + linear(out, w.o))
        self.length += n
        return hidden[0]
