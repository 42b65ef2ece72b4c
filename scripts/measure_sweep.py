"""Time of a K x temperature sweep (default 8 K values x 3 temperatures at 64 new tokens) on the
bundled default pair, through the Sweep tab's own callback (no browser, figures included).

Model loading is done (and timed) before the sweep starts; the sweep time includes the three
target-only baselines it measures.

    python scripts/measure_sweep.py [--ks 1-8] [--temperatures "0, 0.7, 1.0"] [--tokens 64]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as app.py does, before torch is imported
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specdec import presets  # noqa: E402
from specdec.ui.callbacks import Lab  # noqa: E402
from specdec.ui.session import Session  # noqa: E402
from specdec.ui.sweep_view import sweep  # noqa: E402

PROMPT = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="1-8")
    parser.add_argument("--temperatures", default="0, 0.7, 1.0")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--target", default=presets.DEFAULT_TARGET)
    parser.add_argument("--draft", default=presets.DEFAULT_DRAFT)
    parser.add_argument("--prompt", default=PROMPT)
    args = parser.parse_args()

    lab = Lab()
    start = time.perf_counter()
    lab.load(args.target), lab.load(args.draft)
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    final = list(sweep(lab, Session(), args.prompt, False, args.target, "", [args.draft], args.ks,
                       args.temperatures, args.tokens, 0, 1.0, 0))[-1]
    sweep_s = time.perf_counter() - start
    if final.get("error"):
        raise SystemExit(final["error"])

    table = final["sweep_table"]
    cols = ["temperature", "k", "acceptance_rate", "tokens_per_s", "baseline_tokens_per_s", "speedup",
            "theory_speedup", "c"]
    print(table[cols].to_string(index=False))
    best = table[table.best_measured][["temperature", "k", "speedup", "theory_best_k", "alpha", "c_pooled"]]
    print("\nbest K per temperature:\n" + best.to_string(index=False))
    print(json.dumps({"points": len(table), "tokens": args.tokens, "load_s": round(load_s, 2),
                      "sweep_s": round(sweep_s, 2)}))


if __name__ == "__main__":
    main()
