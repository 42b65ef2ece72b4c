"""How far each drafter is from a target speedup on this machine, and whether free drafting would reach it.

    python experiments/measure_speedup_bound.py [--per-kind 4] [--kinds chat] [--ks 1-4] [--new-tokens 64]
                                            [--goal 1.6] [--draft a,b,...]

Greedy decoding of held-out prompts (training.zoo.prompts, in the chat template). Per drafter and K it prints:
- E: tokens per target forward (exact in greedy: all prompts' tokens / all forwards);
- Kc and v: a step's drafting time and its target side (verifying, bookkeeping), each over the same prompt's
  target-only step from a run just before the drafter's (specdec/engine/theory.py; for a tree, Kc is its whole drafting);
- E / (Kc + v): the cost model's speedup (the Sweep's measured-cost theory, within a few percent of its
  interleaved pairs: docs/zoo.md), and E / v: the ceiling if drafting cost nothing;
- the E the goal needs at these costs: goal x (Kc + v).
A second target-only pass after each drafter prints the machine's drift. Nothing here is a paired wall-clock
speedup (experiments/measure_sweep.py measures those); it shows where the gap is: acceptance (E) or cost (Kc, v).
"""
from __future__ import annotations

import argparse

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec import DecodeSettings, generate
from specdec.drafters.eagle import EAGLE_TREE
from specdec.drafters.eagle3 import EAGLE3_TREE
from specdec.drafters.registry import NAMES
from specdec.engine.theory import median, target_forward_s
from specdec.measure.sweep import parse_ks

from training.zoo.data import chat_ids
from training.zoo.prompts import heldout_prompts

DRAFTS = ",".join((*NAMES, EAGLE_TREE, EAGLE3_TREE))  # the trained drafters and the 8-node trees


def target_step_s(target, prompts, new_tokens: int) -> list[float]:
    """One target-only run per prompt: its median step time."""
    settings = DecodeSettings(max_new_tokens=new_tokens)
    return [target_forward_s(generate(target, None, ids, settings).events) for ids in prompts]


def full_steps(events) -> list:
    """The steps after the first that drafted the run's usual number of tokens (a chain's K, a tree's nodes):
    the last steps, shrunk near max_new_tokens, are left out."""
    steps = events[1:]
    sizes = [e.k for e in steps]
    usual = max(set(sizes), key=sizes.count) if sizes else 0
    return [e for e in steps if e.k == usual]


def drafter_row(target, drafter, prompts, k: int, new_tokens: int, step_s: list[float]) -> dict:
    """E over all prompts; a step's drafting (K c) and target side (v) as medians of each prompt's own ratios
    to its target-only step."""
    tokens = forwards = 0
    drafting, verifying = [], []
    for ids, base in zip(prompts, step_s):
        events = generate(target, drafter, ids, DecodeSettings(max_new_tokens=new_tokens, k=k)).events
        tokens += sum(len(e.emitted_ids) for e in events)
        forwards += len(events)
        steps = full_steps(events)
        drafting.append(median([e.draft_time_s for e in steps]) / base if steps else None)
        verifying.append(median([e.verify_time_s + e.other_time_s for e in steps]) / base if steps else None)
    return {"E": tokens / forwards, "drafting": median(drafting), "v": median(verifying)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-kind", type=int, default=4)
    parser.add_argument("--kinds", default="chat", help="comma-separated: chat, code, rewrite")
    parser.add_argument("--ks", default="1-4")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--goal", type=float, default=1.6)
    parser.add_argument("--draft", default=DRAFTS)
    args = parser.parse_args()
    texts = heldout_prompts(args.per_kind)
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in texts]
    if unknown:
        parser.error(f"unknown prompt kind(s) {', '.join(unknown)}: choose from {', '.join(texts)}")
    target = specdec.load_model("smollm2-135m-instruct")
    prompts = [chat_ids(target.tokenizer, text) for kind in kinds for text in texts[kind]]
    target_step_s(target, prompts[:1], 8)  # warm-up
    print(f"runner: {target.runner_kind}; kinds {', '.join(kinds)}: {len(prompts)} prompts x {args.new_tokens} "
          f"tokens, greedy; goal {args.goal}x", flush=True)
    print(f"{'drafter':26} {'K':>2} {'E':>6} {'Kc':>6} {'v':>6} {'E/(Kc+v)':>9} {'E/v':>6} {'E needed':>9}")
    for name in (d.strip() for d in args.draft.split(",") if d.strip()):
        drafter = specdec.load_drafter(name, target)
        before = target_step_s(target, prompts, args.new_tokens)
        rows = {k: drafter_row(target, drafter, prompts, k, args.new_tokens, before) for k in parse_ks(args.ks)}
        after = target_step_s(target, prompts, args.new_tokens)
        drift = median(after) / median(before) - 1
        for k, row in rows.items():
            e, drafting, v = row["E"], row["drafting"], row["v"]
            if v is None:
                print(f"{name:26} {k:>2} {e:6.3f}  (no full step)")
                continue
            cost = drafting + v
            print(f"{name:26} {k:>2} {e:6.3f} {drafting:6.3f} {v:6.3f} {e / cost:8.2f}x {e / v:5.2f}x "
                  f"{args.goal * cost:9.2f}", flush=True)
        print(f"  (target-only step {1000 * median(before):.1f} ms before, {1000 * median(after):.1f} ms after: "
              f"{drift:+.0%})", flush=True)


if __name__ == "__main__":
    main()
