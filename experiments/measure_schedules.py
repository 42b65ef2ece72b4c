"""Adaptive K against constant K: per prompt kind, the best constant K's measured speedup over
K = 1..K_MAX and each adaptive schedule's (heuristic, confidence, optimal, all with K_MAX as the
largest K), greedy, each a measured speedup (specdec.measure.speedup: interleaved timed pairs of
speculative and target-only runs over the same number of tokens, median with its 95% interval).

    python experiments/measure_schedules.py [--target lab-target] [--draft lab-draft-distilled] [--k-max 8]
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec import DecodeSettings
from specdec.engine.schedules import SCHEDULES
from specdec.measure.speedup import Policy, measure_speedup
from specdec.models import presets
from specdec.models.prompting import encode_prompt

PROMPTS = {
    "code": "def read_config(path):\n    \"\"\"Read a JSON configuration file and return a dict.\"\"\"\n",
    "prose": "The standard library provides modules for",
    "copying": ("Repeat exactly: The os module provides a portable way of using operating system dependent "
                "functionality. The os module provides a portable way of using"),
}
POLICY = Policy(min_repeats=6, floor_repeats=6, max_repeats=12, tolerance=0.04, budget_s=8.0)


def measured(target, drafter, ids, settings) -> dict:
    estimate = None
    for estimate in measure_speedup(specdec, target, drafter, ids, settings, policy=POLICY):
        pass
    return {"speedup": estimate.ratio, "low": estimate.low, "high": estimate.high, "repeats": estimate.repeats,
            "tokens": estimate.new_tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", default=presets.LAB_TARGET)
    parser.add_argument("--draft", default=presets.LAB_DRAFT)
    parser.add_argument("--k-max", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--chat", action="store_true", help="wrap prompts in the target's chat template")
    args = parser.parse_args()
    target = specdec.load_model(args.target)
    drafter = specdec.load_drafter(args.draft, target)
    base = DecodeSettings(max_new_tokens=args.tokens, temperature=0.0)
    report = {}
    for kind, text in PROMPTS.items():
        ids = encode_prompt(target, text, chat=args.chat)
        specdec.generate(target, drafter, ids, replace(base, max_new_tokens=8))  # warm-up, untimed
        constant = {k: measured(target, drafter, ids, replace(base, k=k)) for k in range(1, args.k_max + 1)}
        best_k = max(constant, key=lambda k: constant[k]["speedup"] or 0)
        row = {"best constant K": best_k, "constant": constant[best_k]}
        for schedule in SCHEDULES[1:]:
            row[schedule] = measured(target, drafter, ids, replace(base, k=args.k_max, k_schedule=schedule))
        report[kind] = row
        cells = [f"{name} {fig['speedup']:.2f}x [{fig['low']:.2f}-{fig['high']:.2f}]"
                 for name, fig in row.items() if isinstance(fig, dict)]
        print(f"{kind:8} best constant K={best_k}: " + " | ".join(cells), flush=True)
    print(json.dumps({"target": args.target, "draft": args.draft, "k_max": args.k_max, "tokens": args.tokens,
                      "results": report}))


if __name__ == "__main__":
    main()
