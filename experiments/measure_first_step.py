"""Step 0's drafting time against a target-only step, per drafter, in fresh CLI runs.

A CLI run is a fresh process: whatever a drafter does once (packing its weights, first-call allocations) is
paid in the run unless loading did it (Drafter.warm_up, called by registry.load_drafter). For each drafter
this runs `python -m specdec generate --draft NAME --k 4 --json` a few times, each in its own process, and
reads the per-step draft times from the JSON's steps; `--draft none` runs give the target-only step time
(the median step of a run, step 0 left out). Printed per drafter, medians with [min–max] over the runs:

  step 0 draft ms     the drafting inside step 0 (its first proposal)
  later draft ms      the median drafting of the steps after it that drafted
  step 0 / target     step 0's drafting in target-only step times (issue 52's bound: at most 3)
  c                   the later steps' drafting per drafted token over a target-only step (the cost model's c;
                      a tree step's tokens are the chain it shows, so a tree's c is not the chain's)

    python experiments/measure_first_step.py [--runs 3] [--tokens 32] [--drafts prompt-lookup,smollm2-135m-eagle3]

Run it alone on the machine (timings): flock -x /tmp/specdec-cpu.lock python experiments/measure_first_step.py
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

DRAFTS = ("prompt-lookup", "suffix", "smollm2-135m-draft", "lab-draft-distilled", "smollm2-135m-early-exit",
          "smollm2-135m-medusa", "smollm2-135m-eagle", "smollm2-135m-eagle-tree", "smollm2-135m-eagle-tree-60",
          "smollm2-135m-eagle3", "smollm2-135m-eagle3-tree", "auto")
PROMPT = "Explain in a few sentences how photosynthesis works."
BOUND = 3.0  # issue 52: no speculative CLI run's step 0 drafts for more than 3 target-step times


def cli_steps(draft: str, args) -> list[dict]:
    """The steps of one fresh `generate --json` run."""
    command = [sys.executable, "-m", "specdec", "generate", "--draft", draft, "--k", "4", "--prompt", args.prompt,
               "--max-new-tokens", str(args.tokens), "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["steps"]


def step_s(step: dict) -> float:
    return step["draft_time_s"] + step["verify_time_s"] + step["other_time_s"]


def spread(values: list[float], pattern: str = "{:.1f}") -> str:
    """median [min–max]"""
    return (f"{pattern.format(statistics.median(values))} "
            f"[{pattern.format(min(values))}–{pattern.format(max(values))}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh CLI runs per drafter")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--drafts", default=",".join(DRAFTS), help="comma-separated draft names")
    args = parser.parse_args()

    target_steps = [statistics.median(step_s(s) for s in cli_steps("none", args)[1:]) for _ in range(args.runs)]
    target = statistics.median(target_steps)
    print(f"target-only step: {spread([t * 1e3 for t in target_steps], '{:.2f}')} ms over {args.runs} runs "
          f"(median step of each run, step 0 left out)")
    print(f"{'draft':28s} {'step 0 draft ms':>22s} {'later draft ms':>20s} {'step 0 / target':>22s} {'c':>20s}")
    worst = 0.0
    for draft in args.drafts.split(","):
        first, later, costs = [], [], []
        for _ in range(args.runs):
            steps = cli_steps(draft, args)
            first.append(steps[0]["draft_time_s"] * 1e3)
            drafting = [s["draft_time_s"] * 1e3 for s in steps[1:] if s["k"] > 0]
            if drafting:
                later.append(statistics.median(drafting))
                costs.append(statistics.median(s["draft_time_s"] / s["k"] for s in steps[1:] if s["k"] > 0) / target)
        ratios = [f / (target * 1e3) for f in first]
        worst = max(worst, max(ratios))
        print(f"{draft:28s} {spread(first):>22s} {spread(later, '{:.2f}') if later else '–':>20s} "
              f"{spread(ratios, '{:.2f}'):>22s} {spread(costs, '{:.3f}') if costs else '–':>20s}")
    print(f"largest step 0 / target step: {worst:.2f} (bound {BOUND:.0f}: {'met' if worst <= BOUND else 'NOT met'})")


if __name__ == "__main__":
    main()
