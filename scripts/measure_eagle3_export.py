"""Where the EAGLE-3 head's vLLM export loses its acceptance: teacher-forced first-draft agreement of the zoo head
against vLLM's eagle3 layer computed here from the exported tensors, and against that layer with the zoo's
residual stream put back.

    python scripts/measure_eagle3_export.py [--per-kind 2] [--new-tokens 64]

The export (`python -m specdec vllm serve --method eagle3 --draft smollm2-135m-eagle3` writes it; this script
writes it too when missing) is read back and run as vllm/model_executor/models/llama_eagle3.py runs layer 0:
attention over [RMSNorm(embedding); RMSNorm(fused)], residual = the fused feature, final norm, lm_head over the
draft vocabulary. The target (float32) answers each held-out prompt greedily; each head then reads the target's
true fused features and tokens (depth 0) and predicts each next-but-one token. Printed per kind: the share of
answer positions where its top-1 is the target's token (the first draft position's greedy acceptance).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specdec.vllm.export import export_draft  # noqa: E402
from specdec.zoo.build import drafter_dir, load_eagle_head  # noqa: E402
from specdec.zoo.data import chat_ids  # noqa: E402
from specdec.zoo.heads import _expand_kv, _mlp, apply_rotary_pos_emb, rope_tables, unit_rms  # noqa: E402
from specdec.zoo.pipeline import load_target_for_training  # noqa: E402
from specdec.zoo.prompts import heldout_prompts  # noqa: E402

NAME = "smollm2-135m-eagle3"


def vllm_layer(export: dict, layer, fused, embeds, cos, sin, eps: float, residual=None) -> torch.Tensor:
    """vLLM's eagle3 layer 0 over whole sequences: fused, embeds [T, d] -> output [T, d] (before the final norm).
    residual: what the attention output is added to (vLLM: the fused feature)."""
    t, d = fused.shape
    attn = layer.self_attn
    hd = attn.head_dim
    u = torch.cat([unit_rms(embeds, eps), unit_rms(fused, eps)], dim=-1)  # [T, 2d]; the norms' weights are one
    q, k, v = (F.linear(u, export[f"midlayer.self_attn.{n}_proj.weight"].float()).view(1, t, -1, hd).transpose(1, 2)
               for n in ("q", "k", "v"))
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    groups = q.shape[1] // k.shape[1]
    out = F.scaled_dot_product_attention(q, _expand_kv(k, groups), _expand_kv(v, groups), is_causal=True,
                                         scale=attn.scaling)
    out = attn.o_proj(out.transpose(1, 2).reshape(1, t, -1))[0]
    return _mlp(layer, (fused if residual is None else residual) + out)


@torch.inference_mode()
def agreement(model, head, vocab, export, ids: list[int], new_tokens: int) -> tuple[list[int], int]:
    """Hits of [zoo head, vLLM layout, vLLM layout with the zoo residual], answer positions."""
    seq = model.generate(torch.tensor([ids]), max_new_tokens=new_tokens, do_sample=False)[0]
    states = model(seq[None], output_hidden_states=True).hidden_states
    fused = head.fused(torch.cat([states[i][0] for i in head.feature_layers], dim=-1))[:-1]  # [T-1, d]
    embeds = model.get_input_embeddings()(seq[1:])  # row p: (feature p, token p + 1) -> token p + 2
    cos, sin = rope_tables(model.config, len(fused), fused.dtype)
    x = head.inputs(fused, embeds)
    eps = model.config.rms_norm_eps
    layer = head.layers[0]
    outputs = [head.forward_sequences(x[None], cos[None], sin[None])[0],
               vllm_layer(export, layer, fused, embeds, cos[None], sin[None], eps),
               vllm_layer(export, layer, fused, embeds, cos[None], sin[None], eps, residual=x)]
    rows = model.get_output_embeddings().weight[vocab]
    answer = slice(len(ids) - 2, len(seq) - 2)
    truth = seq[2:][answer]
    hits = [int((vocab[F.linear(out, rows).argmax(-1)][:-1][answer] == truth).sum()) for out in outputs]
    return hits, len(truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(2)
    from safetensors.torch import load_file

    model, tokenizer, _ = load_target_for_training("float32")
    head, vocab = load_eagle_head(model.config, drafter_dir(NAME))
    head, vocab = head.float(), vocab.long()
    export = load_file(str(export_draft(NAME) / "model.safetensors"))
    print("first-draft agreement, teacher-forced: zoo head | vLLM eagle3 layout (export) | export with the zoo's "
          "residual")
    for kind, texts in heldout_prompts(args.per_kind).items():
        total, positions = [0, 0, 0], 0
        for text in texts:
            hits, n = agreement(model, head, vocab, export, chat_ids(tokenizer, text), args.new_tokens)
            total, positions = [a + b for a, b in zip(total, hits)], positions + n
        print(f"{kind:8s} " + " | ".join(f"{h / positions:.3f}" for h in total) + f"  ({positions} positions)",
              flush=True)


if __name__ == "__main__":
    main()
