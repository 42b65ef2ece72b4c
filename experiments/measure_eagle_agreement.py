"""How often an EAGLE head's first draft agrees with the target, teacher-forced on held-out answers.

    python experiments/measure_eagle_agreement.py [--folder assets/drafters/smollm2-135m-eagle] [--per-kind 2] \
        [--dtype bfloat16]

The target (SmolLM2-135M-Instruct, in --dtype: float32 by default) answers each held-out prompt greedily (64
tokens); the head then reads the target's true features and tokens (as in training, depth 0) and predicts each
next-but-one token. Printed: the share of answer positions where its top-1 equals the target's token — the
first draft position's acceptance in greedy decoding, without the engine around it (a gap between the two
would mean a train/inference mismatch) — then, per prompt kind, the share where the target's token is among
the head's top 1..--top (what a tree draft of that width at the first position would accept).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from specdec.drafters.eagle import load_eagle_head
from specdec.drafters.heads import EagleHead, rope_tables
from specdec.drafters.shipped import drafter_dir

import torch
import torch.nn.functional as F

from training.zoo.data import chat_ids
from training.zoo.pipeline import load_target_for_training
from training.zoo.prompts import heldout_prompts


@torch.inference_mode()
def coverage(model, head: EagleHead, vocab: torch.Tensor, ids: list[int], new_tokens: int, top: int = 1):
    """hits [top] (answer positions whose target token is among the head's first k + 1 choices), positions."""
    prompt = torch.tensor([ids])
    seq = model.generate(prompt, max_new_tokens=new_tokens, do_sample=False)[0]
    features = model.model(input_ids=seq[None]).last_hidden_state[0]  # [T, d]
    emb = model.get_input_embeddings().weight
    # row p = (feature p, token p + 1) -> the token at p + 2
    x = head.inputs(features[:-1], F.embedding(seq[1:], emb))[None]
    cos, sin = rope_tables(model.config, len(seq) - 1, features.dtype)
    out = head.norm(head.forward_sequences(x, cos[None], sin[None])[0])
    choices = vocab[F.linear(out, model.get_output_embeddings().weight[vocab]).topk(top, -1).indices]  # [T - 1, top]
    answer = slice(len(ids) - 2, len(seq) - 2)
    hit = choices[:-1][answer] == seq[2:][answer, None]
    return hit.cumsum(-1).clamp(max=1).sum(0), hit.shape[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", default=str(drafter_dir("smollm2-135m-eagle")))
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--top", type=int, default=4, help="widest first-position choice list to count")
    parser.add_argument("--dtype", default="float32", help="the target's (and the head's) dtype")
    args = parser.parse_args()
    torch.set_num_threads(2)
    model, tokenizer, _ = load_target_for_training(args.dtype)
    head, vocab = load_eagle_head(model.config, Path(args.folder))
    head = head.to(getattr(torch, args.dtype))
    vocab = vocab.long()
    for kind, texts in heldout_prompts(args.per_kind).items():
        hits, positions = torch.zeros(args.top), 0
        for text in texts:
            h, n = coverage(model, head, vocab, chat_ids(tokenizer, text), args.new_tokens, args.top)
            hits, positions = hits + h, positions + n
            print(f"{kind:8s} first-draft agreement {float(h[0]) / n:.2f}  {text[:50]!r}", flush=True)
        shares = " / ".join(f"{float(x) / positions:.3f}" for x in hits)
        print(f"{kind:8s} target token among the head's top 1..{args.top}: {shares}", flush=True)


if __name__ == "__main__":
    main()
