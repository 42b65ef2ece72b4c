"""How repeatable is the speedup the app reports? Issue 9's check, through the API of a fresh app.

For the default prompt and each example (lab pair unless --target/--draft say otherwise), calls
/generate N times (default 5), each from a fresh client (a fresh browser session, so nothing is
reused from a cache), and prints every reported speedup with its interval, and max/min over the
calls. Then one /race per configuration, from yet another fresh session, and whether its measured
figure lies inside the Generate intervals.

    python experiments/measure_speedup_consistency.py [--calls 5] [--target lab-target] [--draft lab-draft-distilled]
        [--examples 0,1,2]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path

from specdec.models import presets
from specdec.paths import REPO_ROOT
from specdec.ui.launch import app_process
from specdec.ui.layout import EXAMPLES

from gradio_client import Client

ROOT = REPO_ROOT

OUTPUTS = ["status", "error", "cleanup", "tokens", "cards", "plot_acceptance", "plot_lengths", "plot_throughput",
           "plot_memory", "steps_table", "exports"]
RACE_OUTPUTS = ["cleanup", "race_base", "race_spec", "race_summary", "status", "error"]
RACE_FIGURE = re.compile(r"Measured speedup: ([\d.]+)×(?:, 95% interval ([\d.]+)–([\d.]+))?")


def configurations(target: str, draft: str) -> list[dict]:
    base = dict(clean_whitespace=True, target=target, draft=draft, target_custom="", draft_custom="", top_p=1.0,
                top_k=0)
    return [{**base, "prompt": prompt, "k": k, "temperature": t, "seed": seed, "max_new_tokens": tokens}
            for prompt, k, t, seed, tokens in EXAMPLES]


def generate_once(url: str, config: dict) -> dict:
    out = dict(zip(OUTPUTS, Client(url, verbose=False).predict(**config, api_name="/generate")))
    if out["error"]:
        raise SystemExit(f"error from /generate: {out['error']}")
    report = json.loads(Path(next(p for p in out["exports"] if str(p).endswith(".json"))).read_text())
    return report["speedup"]


def race_once(url: str, config: dict) -> tuple[float, float | None, float | None]:
    out = dict(zip(RACE_OUTPUTS, Client(url, verbose=False).predict(**config, api_name="/race")))
    found = RACE_FIGURE.search(out["race_summary"])
    if not found:
        raise SystemExit(f"no measured figure in the race summary: {out['race_summary']}")
    low, high = found.group(2), found.group(3)
    return float(found.group(1)), float(low) if low else None, float(high) if high else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--target", default=presets.LAB_TARGET)
    parser.add_argument("--draft", default=presets.LAB_DRAFT)
    parser.add_argument("--examples", default=None, help="which examples, by index (e.g. 0,1,2; default: all)")
    args = parser.parse_args()
    chosen = None if args.examples is None else {int(i) for i in args.examples.split(",")}
    summary = []
    with app_process(Path(tempfile.gettempdir()) / "specdec-consistency-app.log", "--no-preload") as url:
        for index, config in enumerate(configurations(args.target, args.draft)):
            if chosen is not None and index not in chosen:
                continue
            name = f"{config['prompt'][:28]!r} K={config['k']} T={config['temperature']:g} seed={config['seed']}"
            started = time.perf_counter()
            calls = [generate_once(url, config) for _ in range(args.calls)]
            ratios = [c["ratio"] for c in calls]
            race, race_low, race_high = race_once(url, config)
            inside = sum(1 for c in calls if c["low"] is not None and c["low"] <= race <= c["high"])
            spread = max(ratios) / min(ratios)
            print(f"\n{name}  ({time.perf_counter() - started:.0f} s)")
            for c in calls:  # both sides' medians show which one moved between calls
                print(f"  generate: {c['description']}  [{c['verdict']}]  speculative {c['lead_tokens_per_s']:.1f} "
                      f"tok/s, target-only {c['follow_tokens_per_s']:.1f} tok/s")
            race_interval = f", 95% interval {race_low:.2f}–{race_high:.2f}" if race_low else ""
            print(f"  race:     {race:.2f}×{race_interval}; inside {inside} of {len(calls)} Generate intervals")
            print(f"  max/min over {len(calls)} Generate calls: {spread:.3f}")
            summary.append({"configuration": name, "ratios": ratios, "max_over_min": spread, "race": race,
                            "race_inside_generate_intervals": inside,
                            "intervals": [(c["low"], c["high"]) for c in calls],
                            "repeats": [c["repeats"] for c in calls],
                            "tokens_per_s": [(c["lead_tokens_per_s"], c["follow_tokens_per_s"]) for c in calls]})
    print(json.dumps({"load_average": os.getloadavg(), "configurations": summary}))


if __name__ == "__main__":
    main()
