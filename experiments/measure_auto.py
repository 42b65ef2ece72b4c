"""`auto` (drafter and K chosen per run, speculation off where it does not pay) against fixed (drafter, K) pairs,
each as a measured speedup over target-only (specdec/measure/speedup.py: interleaved pairs, median ratio with a 95%
interval), on held-out chat prompts and on a prompt where every drafter loses.

The contestants take turns pair by pair (round robin), so that load from other processes hits them alike; each
contestant's own pairs alternate which side runs first. Prints one line per (prompt, contestant) and the JSON.

    python experiments/measure_auto.py [--pairs 6] [--tokens 64] [--prompts story,octopuses]
"""
from __future__ import annotations

import argparse
import json
import time

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec import DecodeSettings, load_model
from specdec.measure.speedup import Measurement, Policy, engine_contestants, measure
from specdec.models.prompting import encode_prompt
from specdec.planning.choice import AUTO, AUTO_K_MAX
from specdec.planning.run import load_drafter

# two held-out chat prompts (training/zoo/prompts.py's held-out templates and topics, not the cards' own two),
# and one where every drafter loses (the drafters were trained on English answers)
PROMPTS = {
    "chat: octopuses": "I want to understand octopuses. Where should I start?",
    "chat: lighthouses": "What should everyone know about lighthouses?",
    "losing: French poem": "Écris un court poème sur la mer, en français.",
    # a long answer where every drafter loses: auto has room to learn that speculation does not pay
    "losing: French story": "Raconte une longue histoire en français sur un vieux pêcheur et la mer.",
}
# the fixed pairs that led on this machine (docs/benchmarks.md: a first round with eagle K=4, draft K=2 and the 8-node
# tree as well had them behind), and the EAGLE-3 head at the K auto chooses for it and at the Sweep's best on chat
FIXED = [("smollm2-135m-eagle", 1), ("smollm2-135m-eagle", 2), ("smollm2-135m-draft", 1), ("smollm2-135m-medusa", 1),
         ("smollm2-135m-eagle3", 3), ("smollm2-135m-eagle3", 4)]


def contestants(target, tokens: int):
    """(label, drafter, settings): auto as `--draft auto --k auto`, then the fixed pairs at a constant K."""
    drafters = {name: load_drafter(name, target) for name in {AUTO, *(n for n, _ in FIXED)}}
    out = [(f"{AUTO} (K up to {AUTO_K_MAX})", drafters[AUTO],
            DecodeSettings(max_new_tokens=tokens, k=AUTO_K_MAX, k_schedule=AUTO))]
    out += [(f"{name} K={k}", drafters[name], DecodeSettings(max_new_tokens=tokens, k=k)) for name, k in FIXED]
    return out


def measure_round_robin(target, ids, entries, pairs: int) -> dict:
    """Every contestant one more timed pair per round, `pairs` rounds; {label: final Estimate}."""
    runs = {label: (engine_contestants(specdec, target, drafter, ids, settings), Measurement())
            for label, drafter, settings in entries}
    estimates = {}
    for round_index in range(pairs):
        for label, ((lead, follow), m) in runs.items():
            m.state = "measuring"
            policy = Policy(min_repeats=round_index + 1, floor_repeats=round_index + 1, max_repeats=round_index + 1)
            for estimates[label] in measure(lead, follow, policy, measurement=m):
                pass
    return estimates


def auto_summary(target, ids, drafter, tokens: int) -> str:
    result = specdec.generate(target, drafter, ids, DecodeSettings(max_new_tokens=tokens, k=AUTO_K_MAX,
                                                                   k_schedule=AUTO))
    kinds = [e.decision for e in result.events]
    return (f"{result.auto['why']} | steps: {kinds.count('speculate')} speculate, {kinds.count('off')} off, "
            f"{kinds.count('probe')} probe")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--prompts", default="", help="only the prompts whose label contains one of these words "
                                                      "(comma-separated), e.g. 'story'")
    args = parser.parse_args()
    wanted = [w for w in args.prompts.split(",") if w]
    started = time.perf_counter()
    target = load_model("smollm2-135m-instruct")
    entries = contestants(target, args.tokens)
    report = {}
    for name, text in PROMPTS.items():
        if wanted and not any(w in name for w in wanted):
            continue
        ids = encode_prompt(target, text, chat=True)
        print(f"\n{name}: {auto_summary(target, ids, entries[0][1], args.tokens)}", flush=True)
        estimates = measure_round_robin(target, ids, entries, args.pairs)
        report[name] = {label: est.to_dict() for label, est in estimates.items()}
        for label, est in estimates.items():
            print(f"  {label:28s} {est.describe()}", flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
