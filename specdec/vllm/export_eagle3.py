"""The zoo's EAGLE-3 head (`smollm2-135m-eagle3`) in vLLM's eagle3 layout (vllm/model_executor/models/llama_eagle3.py),
weight for weight, and vLLM's forward over such a checkpoint written out in torch (to check the export by).

The head is trained in that layout (EagleHead's "concat" input, docs/zoo.md "EAGLE-3"), so every tensor has its
place: the fuse is vLLM's `fc` over the target's states after layers 2, 15 and 27 (vLLM's default aux layers for a
30-layer Llama, counted the same way: the residual stream after that many layers), each RMS-normalised first
(`fc_norm`, weights one: the zoo normalises without a weight); the decoder layer goes under `midlayer.` (its q/k/v
read [input_layernorm(embedding); hidden_norm(feature)], 2d wide, in vLLM's order); the head's `norm` is vLLM's
final norm; `lm_head` holds the target's head rows of the 12,288-token draft vocabulary and `d2t` maps them back to
target ids. The embedding is the target's (vLLM shares it when the checkpoint has none).

A head in the zoo's older "fc" layer (fc over [feature; 14 x embedding] as the layer's input and residual) has no
such export: vLLM adds its attention to the fused feature alone, and no weights carry the token's residual there
(measured when the zoo shipped one: vLLM's acceptance length 1.03 against the lab's 2.13, docs/vllm.md).
"""
from __future__ import annotations

from specdec.drafters.heads import rope_tables

import torch
import torch.nn.functional as F


def eagle3_config(target_config: dict, meta: dict, draft_vocab: int) -> dict:
    """The target's config as vLLM's eagle3 draft reads it (one layer, the head's MLP width, its own head)."""
    config = dict(target_config)
    config.update(architectures=["LlamaForCausalLMEagle3"], num_hidden_layers=1, tie_word_embeddings=False,
                  intermediate_size=int(meta.get("intermediate_size") or target_config["intermediate_size"]),
                  draft_vocab_size=draft_vocab, target_hidden_size=target_config["hidden_size"], fc_norm=True,
                  eagle_config={"use_aux_hidden_state": True,
                                "eagle_aux_hidden_state_layer_ids": list(meta["feature_layers"])})
    return config


def eagle3_tensors(own: dict, target: dict) -> dict:
    """own: the zoo head's tensors (head.*, draft_vocab); target: the target's (embedding, tied head)."""
    d, fused_width = own["head.fuse.weight"].shape
    tensors = {"fc.weight": own["head.fuse.weight"], "norm.weight": own["head.norm.weight"]}
    tensors.update({f"fc_norm.{i}.weight": torch.ones(d) for i in range(fused_width // d)})
    tensors.update({"midlayer." + key[len("head.layers.0."):]: value for key, value in own.items()
                    if key.startswith("head.layers.0.")})
    draft_vocab = own["draft_vocab"].long()  # [Vd] target ids
    head = target.get("lm_head.weight", target["model.embed_tokens.weight"])  # SmolLM2 ties its head
    tensors["lm_head.weight"] = head[draft_vocab]
    tensors["d2t"] = draft_vocab - torch.arange(len(draft_vocab))  # vLLM: target id = draft id + d2t[draft id]
    dtype = own["head.fuse.weight"].dtype
    return {key: (value if key == "d2t" else value.to(dtype)).contiguous() for key, value in tensors.items()}


def vllm_fuse(tensors: dict, eps: float, aux: torch.Tensor) -> torch.Tensor:
    """vLLM's combine_hidden_states: aux [T, m * d] (the target's states after the m layers) -> fc(cat(fc_norm_i(
    chunk_i))) [T, d]."""
    chunks = aux.float().chunk(sum(1 for key in tensors if key.startswith("fc_norm.")), dim=-1)
    normed = [_rms(chunk, tensors[f"fc_norm.{i}.weight"], eps) for i, chunk in enumerate(chunks)]
    return torch.cat(normed, dim=-1) @ tensors["fc.weight"].float().T


def vllm_draft(tensors: dict, config, hidden: torch.Tensor, embeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """vLLM's eagle3 layer 0, final norm and lm_head over one sequence, causal, from positions 0: hidden [T, d] (a
    fused feature or the state fed back from the row before), embeds [T, d] (row t: the token after position t)
    -> (draft-vocabulary logits [T, Vd], the prenorm state [T, d] vLLM feeds to its next draft step)."""
    w = {key: value.float() for key, value in tensors.items() if key != "d2t"}
    eps, t = config.rms_norm_eps, len(embeds)
    head_dim = config.hidden_size // config.num_attention_heads
    x = torch.cat([_rms(embeds.float(), w["midlayer.input_layernorm.weight"], eps),
                   _rms(hidden.float(), w["midlayer.hidden_norm.weight"], eps)], dim=-1)  # [T, 2d]
    q, k, v = (F.linear(x, w[f"midlayer.self_attn.{n}_proj.weight"]).view(1, t, -1, head_dim).transpose(1, 2)
               for n in ("q", "k", "v"))  # [1, heads, T, hd]
    cos, sin = rope_tables(config, t, torch.float32)
    q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
    groups = q.shape[1] // k.shape[1]
    out = F.scaled_dot_product_attention(q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1),
                                         is_causal=True)
    residual = hidden.float() + F.linear(out.transpose(1, 2).reshape(t, -1), w["midlayer.self_attn.o_proj.weight"])
    h = _rms(residual, w["midlayer.post_attention_layernorm.weight"], eps)
    gate, up = F.linear(h, w["midlayer.mlp.gate_proj.weight"]), F.linear(h, w["midlayer.mlp.up_proj.weight"])
    prenorm = residual + F.linear(F.silu(gate) * up, w["midlayer.mlp.down_proj.weight"])
    return F.linear(_rms(prenorm, w["norm.weight"], eps), w["lm_head.weight"]), prenorm


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama's rotary embedding (neox style) of x [1, heads, T, hd] at positions 0..T-1 (cos, sin [T, hd])."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin
