"""Time of a K x temperature sweep (default 8 K values x 3 temperatures at 64 new tokens) on the
bundled default pair, through the Sweep tab's own callback (no browser, figures included).

Model loading is done (and timed) before the sweep starts. Every point is a measured speedup (timed pairs
of speculative and target-only runs, specdec.measure.speedup's sweep policy); the script prints each point with
its interval, both theory forms (textbook v = 1 and measured v(K)) and their errors against the points.

    python experiments/measure_sweep.py [--ks 1-8] [--temperatures "0, 0.7, 1.0"] [--tokens 64] [--budget 6] [--memory]
        [--schedules constant,confidence]

The zoo's drafters side by side on a held-out chat prompt (in the chat template), 10 pairs or more per point:

    python experiments/measure_sweep.py --target smollm2-135m-instruct --chat --ks 1-4 --temperatures 0 \
        --draft smollm2-135m-eagle,smollm2-135m-medusa,smollm2-135m-early-exit,smollm2-135m-draft \
        --prompt "Can you tell me about typewriters?" --pairs 10 --budget 40
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from specdec.measure.speedup import SWEEP, Policy
from specdec.measure.sweep import fit_errors
from specdec.models import presets
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.sweep.callbacks import sweep
from specdec.ui.views.sweep import fit_summary

import pandas as pd

PROMPT = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="1-8")
    parser.add_argument("--temperatures", default="0, 0.7, 1.0")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--target", default=presets.LAB_TARGET)
    parser.add_argument("--draft", default=presets.LAB_DRAFT, help="a draft, or several, comma separated")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the target's chat template")
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds per point (default: the Sweep tab's policy); at least --pairs pairs then")
    parser.add_argument("--pairs", type=int, default=6, help="with --budget: the fewest timed pairs per point")
    parser.add_argument("--memory", action="store_true", help="also print each point's memory (MiB / KiB)")
    parser.add_argument("--schedules", default="constant",
                        help="K schedules to compare, comma separated (specdec.engine.schedules; an adaptive one's K is "
                             "the largest K a step may draft)")
    args = parser.parse_args()

    policy = SWEEP if args.budget is None else Policy(min_repeats=args.pairs, floor_repeats=args.pairs, max_repeats=40,
                                                      tolerance=0.03, budget_s=args.budget,
                                                      hard_budget_s=args.budget)
    lab = Lab(sweep_policy=policy)
    start = time.perf_counter()
    drafts = [d.strip() for d in args.draft.split(",") if d.strip()]
    for draft in drafts:
        lab.engine.load_drafter(draft, lab.load(args.target))  # a model, or prompt lookup, a zoo head…
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    session = Session()
    final = list(sweep(lab, session, args.prompt, False, args.target, "", drafts, args.ks,
                       args.temperatures, args.tokens, 0, 1.0, 0, chat=args.chat,
                       schedules=args.schedules.split(",")))[-1]  # parse_schedules strips
    sweep_s = time.perf_counter() - start
    if final.get("error"):
        raise SystemExit(final["error"])

    rows = session.sweep_rows
    table = pd.DataFrame([asdict(r) for r in rows])
    cols = ["draft", "schedule", "temperature", "k", "acceptance_rate", "alpha", "tokens_per_forward", "tokens_per_s", "baseline_tokens_per_s", "speedup",
            "speedup_low", "speedup_high", "repeats", "theory_textbook", "theory_measured", "theory_free_draft", "c", "v"]
    with pd.option_context("display.width", 220, "display.max_columns", 21):
        print(table[cols].round(3).to_string(index=False))
        if args.memory:
            def scaled(column: str, unit: int):
                return pd.to_numeric(table[column]) / unit

            memory = pd.DataFrame({"draft": table.draft, "k": table.k,
                                   "draft weights MiB": scaled("draft_param_bytes", 2**20),
                                   "draft KV KiB": scaled("draft_kv_bytes", 2**10),
                                   "verification slots KiB": scaled("verify_kv_bytes", 2**10),
                                   "extra MiB": scaled("extra_bytes", 2**20),
                                   "peak delta KiB": scaled("peak_delta_bytes", 2**10)})
            print("\nmemory (the point's latest speculative run):\n" + memory.round(1).to_string(index=False))
    print()
    for fit_line in fit_summary(rows).split(". "):
        print(fit_line.rstrip(".") + ".")
    best = table[table.best_measured][["draft", "schedule", "temperature", "k", "speedup", "theory_best_k", "alpha", "c_pooled"]]
    print("\nbest K per temperature:\n" + best.to_string(index=False))
    print(json.dumps({"points": len(table), "tokens": args.tokens, "load_s": round(load_s, 2),
                      "sweep_s": round(sweep_s, 2), "fit": [asdict(f) for f in fit_errors(rows)]}))


if __name__ == "__main__":
    main()
