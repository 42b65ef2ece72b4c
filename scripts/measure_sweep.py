"""Time of a K x temperature sweep (default 8 K values x 3 temperatures at 64 new tokens) on the
bundled default pair, through the Sweep tab's own callback (no browser, figures included).

Model loading is done (and timed) before the sweep starts. Every point is a measured speedup (timed pairs
of speculative and target-only runs, specdec.measurement's sweep policy); the script prints each point with
its interval, both theory forms (textbook v = 1 and measured v(K)) and their errors against the points.

    python scripts/measure_sweep.py [--ks 1-8] [--temperatures "0, 0.7, 1.0"] [--tokens 64] [--budget 6]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as app.py does, before torch is imported
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd  # noqa: E402

from specdec import presets  # noqa: E402
from specdec.measurement import SWEEP, Policy  # noqa: E402
from specdec.sweep import fit_errors  # noqa: E402
from specdec.ui.callbacks import Lab  # noqa: E402
from specdec.ui.session import Session  # noqa: E402
from specdec.ui.sweep_view import fit_summary, sweep  # noqa: E402

PROMPT = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="1-8")
    parser.add_argument("--temperatures", default="0, 0.7, 1.0")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--target", default=presets.LAB_TARGET)
    parser.add_argument("--draft", default=presets.LAB_DRAFT)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds per point (default: the Sweep tab's policy); at least 6 pairs then")
    args = parser.parse_args()

    policy = SWEEP if args.budget is None else Policy(min_repeats=6, floor_repeats=6, max_repeats=40,
                                                      tolerance=0.03, budget_s=args.budget,
                                                      hard_budget_s=args.budget)
    lab = Lab(sweep_policy=policy)
    start = time.perf_counter()
    lab.engine.load_drafter(args.draft, lab.load(args.target))  # a model, or prompt lookup, a zoo head…
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    session = Session()
    final = list(sweep(lab, session, args.prompt, False, args.target, "", [args.draft], args.ks,
                       args.temperatures, args.tokens, 0, 1.0, 0))[-1]
    sweep_s = time.perf_counter() - start
    if final.get("error"):
        raise SystemExit(final["error"])

    rows = session.sweep_rows
    table = pd.DataFrame([asdict(r) for r in rows])
    cols = ["temperature", "k", "acceptance_rate", "alpha", "tokens_per_s", "baseline_tokens_per_s", "speedup",
            "speedup_low", "speedup_high", "repeats", "theory_textbook", "theory_measured", "c", "v"]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table[cols].round(3).to_string(index=False))
    print()
    for fit_line in fit_summary(rows).split(". "):
        print(fit_line.rstrip(".") + ".")
    best = table[table.best_measured][["temperature", "k", "speedup", "theory_best_k", "alpha", "c_pooled"]]
    print("\nbest K per temperature:\n" + best.to_string(index=False))
    print(json.dumps({"points": len(table), "tokens": args.tokens, "load_s": round(load_s, 2),
                      "sweep_s": round(sweep_s, 2), "fit": [asdict(f) for f in fit_errors(rows)]}))


if __name__ == "__main__":
    main()
