"""Greedy speculative output against target-only greedy output, token for token, on held-out prompts.

    python experiments/measure_greedy_identity.py [--per-kind 4] [--ks 2,4] [--new-tokens 64] [--draft a,b,...]

Where a verification row's products equal a one-token forward's (packed_weights.float16_rows_exact(): FBGEMM's
AVX-512 kernels) the two are identical by construction; on a CPU whose kernels are not row-exact (AVX2) they can
differ where the target's two likeliest tokens tie to within float32 rounding. Prints, per drafter and K, how many
prompts' outputs were identical and, for any that were not, the first position that differs.
"""
from __future__ import annotations

import argparse

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec import DecodeSettings, generate
from specdec.drafters.eagle import EAGLE_TREE
from specdec.drafters.registry import NAMES
from specdec.runners import packed_weights

from training.zoo.data import chat_ids
from training.zoo.prompts import heldout_prompts

DRAFTS = ",".join((*NAMES, EAGLE_TREE))  # the four trained drafters and the 8-node tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-kind", type=int, default=4)
    parser.add_argument("--ks", default="2,4")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--draft", default=DRAFTS)
    args = parser.parse_args()
    target = specdec.load_model("smollm2-135m-instruct")
    prompts = [chat_ids(target.tokenizer, text) for texts in heldout_prompts(args.per_kind).values() for text in texts]
    reference = [generate(target, None, ids, DecodeSettings(max_new_tokens=args.new_tokens)).token_ids for ids in prompts]
    print(f"runner: {target.runner_kind}; float16 rows exact: {packed_weights.float16_rows_exact()}; "
          f"{len(prompts)} prompts x {args.new_tokens} tokens", flush=True)
    for name in (d.strip() for d in args.draft.split(",") if d.strip()):
        drafter = specdec.load_drafter(name, target)
        for k in (int(k) for k in args.ks.split(",")):
            differing = []
            for index, (ids, expected) in enumerate(zip(prompts, reference)):
                tokens = generate(target, drafter, ids, DecodeSettings(max_new_tokens=args.new_tokens, k=k)).token_ids
                if tokens != expected:
                    first = next((i for i, (a, b) in enumerate(zip(tokens, expected)) if a != b), min(len(tokens), len(expected)))
                    differing.append(f"prompt {index} from token {first}")
            print(f"{name} K={k}: {len(prompts) - len(differing)}/{len(prompts)} identical"
                  + (f" ({'; '.join(differing)})" if differing else ""), flush=True)


if __name__ == "__main__":
    main()
