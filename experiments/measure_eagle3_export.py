"""The EAGLE-3 head's vLLM export drafts as the head does: teacher-forced first-draft agreement with the target of
the zoo head (as the lab drafts) and of vLLM's eagle3 forward over the exported checkpoint (written out in torch,
specdec/vllm/export_eagle3.py), and the largest difference of their logits, on held-out prompts.

    python experiments/measure_eagle3_export.py [--per-kind 2] [--new-tokens 64]

The export (`python -m specdec vllm serve --method eagle3 --draft smollm2-135m-eagle3` writes it; this script writes
it too when missing) is read back. The target (float32) answers each held-out prompt greedily; both read the
target's true states (depth 0) and predict each next-but-one token. Printed per kind: the share of answer positions
where each one's top-1 is the target's token (the first draft position's greedy acceptance) and the largest logit
difference between the two.
"""
from __future__ import annotations

import argparse

from specdec.drafters.eagle import load_eagle_head
from specdec.drafters.heads import rope_tables
from specdec.drafters.shipped import drafter_dir
from specdec.vllm.export import export_draft
from specdec.vllm.export_eagle3 import vllm_draft, vllm_fuse

import torch
import torch.nn.functional as F

from training.zoo.data import chat_ids
from training.zoo.pipeline import load_target_for_training
from training.zoo.prompts import heldout_prompts

NAME = "smollm2-135m-eagle3"


@torch.inference_mode()
def agreement(model, head, vocab, export, ids: list[int], new_tokens: int) -> tuple[list[int], int, float]:
    """Hits of [zoo head, vLLM's forward over the export], answer positions, largest logit difference."""
    seq = model.generate(torch.tensor([ids]), max_new_tokens=new_tokens, do_sample=False)[0]
    states = model(seq[None], output_hidden_states=True).hidden_states
    aux = torch.cat([states[i][0] for i in head.feature_layers], dim=-1)[:-1]  # [T-1, 3d]
    embeds = model.get_input_embeddings()(seq[1:])  # row p: (state p, token p + 1) -> token p + 2
    cos, sin = rope_tables(model.config, len(aux), torch.float32)
    zoo = F.linear(head.norm(head.forward_sequences(head.inputs(head.fused(aux), embeds)[None], cos[None],
                                                    sin[None])[0]),
                   model.get_output_embeddings().weight[vocab])
    vllm, _ = vllm_draft(export, model.config, vllm_fuse(export, model.config.rms_norm_eps, aux), embeds)
    answer = slice(len(ids) - 2, len(seq) - 2)
    truth = seq[2:][answer]
    hits = [int((vocab[logits.argmax(-1)][:-1][answer] == truth).sum()) for logits in (zoo, vllm)]
    return hits, len(truth), float((zoo - vllm).abs().max())


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
    print("first-draft agreement, teacher-forced: zoo head | vLLM's eagle3 forward over the export | largest logit "
          "difference")
    for kind, texts in heldout_prompts(args.per_kind).items():
        total, positions, gap = [0, 0], 0, 0.0
        for text in texts:
            hits, n, diff = agreement(model, head, vocab, export, chat_ids(tokenizer, text), args.new_tokens)
            total, positions, gap = [a + b for a, b in zip(total, hits)], positions + n, max(gap, diff)
        print(f"{kind:8s} " + " | ".join(f"{h / positions:.3f}" for h in total) + f" | {gap:.2e}  ({positions} "
              "positions)", flush=True)


if __name__ == "__main__":
    main()
