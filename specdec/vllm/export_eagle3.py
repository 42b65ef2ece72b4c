"""The zoo's EAGLE-3 head (`smollm2-135m-eagle3`) in vLLM's eagle3 layout (vllm/model_executor/models/llama_eagle3.py).

What carries over exactly:
- the fuse: vLLM's `fc` over the target's states after layers 2, 15 and 27 (its default aux layers for a 30-layer
  Llama, the same convention: the residual stream after that many layers), each RMS-normalised first (`fc_norm`,
  weights one: the zoo normalises without a weight);
- the decoder layer's MLP, output projection and post-attention norm;
- the head: the target's head rows of the 12,288-token draft vocabulary as vLLM's `lm_head`, `d2t` mapping them
  back to target ids; vLLM's final `norm` (weight one) rescales a row's logits without moving its argmax, so
  greedy drafts are the zoo head's.

What cannot: the zoo head attends over RMSNorm(fc([fused; 14 x embedding])), vLLM's over [RMSNorm(embedding);
RMSNorm(fused)], two halves normalised apart. The exported q/k/v projections read vLLM's input through M, the
least-squares map from [embedding / rms; fused / rms] to the zoo's normalised fc output on calibration tokens of
the target (training prompts, never held-out ones). And the residuals differ: the zoo layer adds its attention and
MLP to fc([fused; 14 x embedding]), which carries the next token, vLLM's to the fused feature alone; no weights
make up for that, so the export drafts far worse than the head (docs/vllm.md, "The EAGLE-3 head in vLLM", measured
by scripts/measure_eagle3_export.py). A head trained in vLLM's layout would export exactly.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..zoo.heads import unit_rms

CALIBRATION_PROMPTS = 48  # training prompts (zoo/prompts.py), ~10k tokens: 8x the map's 1,152 inputs per row
RIDGE = 1e-6  # relative to the Gram matrix's mean diagonal: numerical safety only (N >> 2d)


def eagle3_config(target_config: dict, meta: dict, draft_vocab: int) -> dict:
    """The target's config as vLLM's eagle3 draft reads it (one layer, the head's MLP width, its own head)."""
    config = dict(target_config)
    config.update(architectures=["LlamaForCausalLMEagle3"], num_hidden_layers=1, tie_word_embeddings=False,
                  intermediate_size=int(meta.get("intermediate_size") or target_config["intermediate_size"]),
                  draft_vocab_size=draft_vocab, target_hidden_size=target_config["hidden_size"], fc_norm=True,
                  eagle_config={"use_aux_hidden_state": True,
                                "eagle_aux_hidden_state_layer_ids": list(meta["feature_layers"])})
    return config


def eagle3_tensors(own: dict, target: dict, input_map: torch.Tensor) -> dict:
    """own: the zoo head's tensors (head.*, draft_vocab); target: the target's (embedding, tied head);
    input_map M [d, 2d]: [embedding / rms; fused / rms] -> the zoo layer's normalised input (calibrate())."""
    d = own["head.fc.weight"].shape[0]
    layers = len(own["head.fuse.weight"][0]) // d
    draft_vocab = own["draft_vocab"].long()  # [Vd] target ids
    layer = {key[len("head.layers.0."):]: value for key, value in own.items() if key.startswith("head.layers.0.")}
    gain = layer["input_layernorm.weight"].float()  # the zoo layer's input norm weight [d]
    tensors = {"fc.weight": own["head.fuse.weight"]}
    tensors.update({f"fc_norm.{i}.weight": torch.ones(d) for i in range(layers)})
    for name in ("q_proj", "k_proj", "v_proj"):  # W [out, d] . diag(gain) . M [d, 2d] -> [out, 2d]
        tensors[f"midlayer.self_attn.{name}.weight"] = layer[f"self_attn.{name}.weight"].float() * gain @ input_map
    tensors["midlayer.self_attn.o_proj.weight"] = layer["self_attn.o_proj.weight"]
    for key in ("mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "post_attention_layernorm.weight"):
        tensors[f"midlayer.{key}"] = layer[key]
    tensors.update({"midlayer.input_layernorm.weight": torch.ones(d), "midlayer.hidden_norm.weight": torch.ones(d),
                    "norm.weight": torch.ones(d)})
    head = target.get("lm_head.weight", target["model.embed_tokens.weight"])  # SmolLM2 ties its head
    tensors["lm_head.weight"] = head[draft_vocab]
    tensors["d2t"] = draft_vocab - torch.arange(len(draft_vocab))  # vLLM: target id = draft id + d2t[draft id]
    dtype = own["head.fc.weight"].dtype
    return {key: (value if key == "d2t" else value.to(dtype)).contiguous() for key, value in tensors.items()}


def calibrate(target_dir: Path, own: dict, meta: dict) -> tuple[torch.Tensor, float]:
    """M [d, 2d], least squares (ridge) over the calibration tokens: row t of [e_t / rms; h_t / rms] @ M.T
    ~ x_t / rms(x_t), x_t = the zoo fc([h_t; 14 e_t]), h_t the fused feature of position t and e_t the
    embedding of token t + 1 (what the head reads at t); and the fit's R^2 on those tokens."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..zoo.build import eagle_head_from
    from ..zoo.prompts import build_prompts

    model = AutoModelForCausalLM.from_pretrained(str(target_dir), dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(target_dir))
    head = eagle_head_from(model.config, own, meta)  # as the lab drafts with it
    eps = model.config.rms_norm_eps  # vLLM's RMSNorms use the config's eps too
    inputs, outputs = [], []
    with torch.no_grad():
        for _, text in build_prompts("train", n=CALIBRATION_PROMPTS):
            ids = _token_ids(tokenizer, text)
            states = model(ids, output_hidden_states=True).hidden_states
            fused = head.fused(torch.cat([states[i][0, :-1] for i in head.feature_layers], dim=-1))  # [T-1, d]
            embeds = model.get_input_embeddings()(ids[0, 1:]).float()  # [T-1, d]
            x = head.inputs(fused, embeds).float()
            inputs.append(torch.cat([unit_rms(embeds, eps), unit_rms(fused, eps)], dim=-1))
            outputs.append(unit_rms(x, eps))
    a, b = torch.cat(inputs).double(), torch.cat(outputs).double()  # [N, 2d], [N, d]
    gram = a.T @ a
    gram += torch.eye(len(gram), dtype=gram.dtype) * RIDGE * gram.diagonal().mean()
    input_map = torch.linalg.solve(gram, a.T @ b)  # [2d, d]
    residual = (a @ input_map - b).pow(2).sum() / (b - b.mean(0)).pow(2).sum()
    return input_map.T.float(), float(1 - residual)


def _token_ids(tokenizer, text: str, max_tokens: int = 512) -> torch.Tensor:
    """[1, T] ids of a user turn in the chat template (as the head drafts), or of the text where there is none."""
    from ..zoo.data import chat_ids

    ids = chat_ids(tokenizer, text) if tokenizer.chat_template else tokenizer(text)["input_ids"]
    return torch.tensor([ids[:max_tokens]])
