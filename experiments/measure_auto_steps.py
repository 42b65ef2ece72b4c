"""Where `auto`'s time goes on one prompt: its steps by decision (speculate, off, probe) against the steps of the
target alone, in one process, runs interleaved.

    python experiments/measure_auto_steps.py [--runs 8] [--tokens 64] PROMPT

Each run of `--draft auto --k auto` is followed by a target-only run of as many tokens; the first two pairs warm up.
Prints the median ratio of wall times (target-only over auto: > 1 is a speedup), then for the last auto run each
decision's step count, median step and summed step time, the K and accepted drafts of its speculating steps, and the
target-only run's median step: what the evidence steps, the probes and the off steps cost over a plain step.
"""
from __future__ import annotations

import argparse
import statistics

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec import DecodeSettings, load_model
from specdec.engine.theory import step_seconds
from specdec.models.prompting import encode_prompt
from specdec.planning.choice import AUTO, AUTO_K_MAX
from specdec.planning.run import load_drafter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    target = load_model("smollm2-135m-instruct")
    ids = encode_prompt(target, args.prompt, chat=True)
    drafter = load_drafter(AUTO, target)
    settings = DecodeSettings(max_new_tokens=args.tokens, k=AUTO_K_MAX, k_schedule=AUTO)
    pairs = []
    for _ in range(args.runs):
        auto = specdec.generate(target, drafter, ids, settings)
        alone = specdec.Generation(target, None, ids, DecodeSettings(max_new_tokens=auto.metrics.new_tokens),
                                   ignore_eos=True).result()
        pairs.append((auto, alone))
    ratios = [alone.metrics.wall_time_s / auto.metrics.wall_time_s for auto, alone in pairs[2:]]
    auto, alone = pairs[-1]
    print(auto.auto["why"])
    print(f"speedup: median {statistics.median(ratios):.3f} over {len(ratios)} pairs ("
          + ", ".join(f"{r:.3f}" for r in ratios) + ")")
    for kind in ("speculate", "off", "probe"):
        steps = [e for e in auto.events if e.decision == kind]
        if steps:
            print(f"{kind:9s} {len(steps):3d} steps, median {statistics.median(map(step_seconds, steps)) * 1e3:.2f} ms, "
                  f"sum {sum(map(step_seconds, steps)) * 1e3:.1f} ms"
                  + (f"; K {[e.k for e in steps]}, accepted {[e.num_accepted for e in steps]}" if kind != "off" else ""))
    print(f"target alone {len(alone.events):3d} steps, median {statistics.median(map(step_seconds, alone.events)) * 1e3:.2f} ms; "
          f"wall {alone.metrics.wall_time_s * 1e3:.1f} ms against auto's {auto.metrics.wall_time_s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
