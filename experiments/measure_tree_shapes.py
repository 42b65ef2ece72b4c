"""Tokens per target forward of the EAGLE head's tree drafts, by tree shape, teacher-forced on held-out answers.

    python experiments/measure_tree_shapes.py [--per-kind 4] [--depths 4] [--shapes "(3,3,8),(4,4,12)"]

The target (SmolLM2-135M-Instruct) answers each held-out prompt greedily (64 tokens); decoding is then
replayed on that answer with the shipped EAGLE head (EagleDrafter.propose_tree, as the engine calls it):
each step drafts a tree, keeps the branch that matches the answer (greedy verification's walk: the answer is
the target's greedy choice) and moves on by the branch + 1. Printed per shape (top, beam, nodes) and depth:
tokens per target forward by prompt kind and the drafting time per step. A chain of K is the shape (1, 1, K).
No target forward is timed: what the extra nodes cost to verify is the runner's (experiments/measure_runner_forward.py).
"""
from __future__ import annotations

import argparse
import time

from specdec.drafters.eagle import build_eagle
from specdec.engine.tree import TreeShape, greedy_path
from specdec.runners.tree_attention import depths
from specdec.models.loading import load_model

import torch

from training.zoo.data import chat_ids
from training.zoo.prompts import heldout_prompts


@torch.inference_mode()
def greedy_answer(target, ids: list[int], new_tokens: int):
    """The target's greedy continuation (prompt + answer ids) and its final-norm features [T, d]."""
    seq = target.model.generate(torch.tensor([ids]), max_new_tokens=new_tokens, do_sample=False)[0]
    return seq.tolist(), target.model.model(input_ids=seq[None]).last_hidden_state[0]


def replay(drafter, ids: list[int], answer: list[int], features, depth: int) -> tuple[int, int, float]:
    """(new tokens, target forwards, drafting seconds) of greedy tree decoding along `answer`."""
    drafter.start(ids, len(answer) + depth + 2)
    drafter.observe(features[: len(ids) - 1])
    n, forwards, seconds = len(ids), 0, 0.0
    while n < len(answer):
        start = time.perf_counter()
        tree = drafter.propose_tree(answer[:n], depth)
        seconds += time.perf_counter() - start
        choices = [answer[n + d] if n + d < len(answer) else -1 for d in [0] + depths(tree.parents)]
        kept = len(greedy_path(tree.ids, tree.parents, choices))
        forwards += 1
        drafter.rollback(n + kept)
        drafter.observe(features[n - 1: n + kept])  # the root's and the kept nodes' features, as the engine
        n += kept + 1
    return len(answer) - len(ids), forwards, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-kind", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--depths", default="4", help="comma-separated tree depths (the K of a tree step)")
    parser.add_argument("--shapes", default="(1,1,4),(2,2,6),(3,2,6),(3,3,8),(4,3,10),(4,4,12),(5,4,16),(6,6,24)",
                        help="(top, beam, nodes) triples; (1, 1, K) is a chain of K")
    args = parser.parse_args()
    torch.set_num_threads(2)
    target = load_model("smollm2-135m-instruct", dtype="float32")
    drafter = build_eagle(target, "smollm2-135m-eagle", "")
    answers = {kind: [(chat_ids(target.tokenizer, text), *greedy_answer(target, chat_ids(target.tokenizer, text),
                                                                        args.new_tokens)) for text in texts]
               for kind, texts in heldout_prompts(args.per_kind).items()}
    for depth in (int(d) for d in args.depths.split(",")):
        for shape in eval(f"[{args.shapes}]"):  # noqa: S307 (a command-line list of int triples)
            drafter.tree_shape = TreeShape(*shape)
            figures, seconds, steps = [], 0.0, 0
            for kind, items in answers.items():
                new = forwards = 0
                for ids, answer, features in items:
                    n, f, s = replay(drafter, ids, answer, features, depth)
                    new, forwards, seconds, steps = new + n, forwards + f, seconds + s, steps + f
                figures.append(f"{kind} {new / forwards:.2f}")
            print(f"depth {depth} shape {shape}: tokens per target forward {'  '.join(figures)}; "
                  f"drafting {1000 * seconds / steps:.1f} ms/step", flush=True)


if __name__ == "__main__":
    main()
