"""Wall-time speedup of suffix decoding, prompt lookup and the best trained head over the target alone, on a
workload's later requests (every request but the first), with the Sweep's method (specdec/measure/speedup.py):
paired runs, interleaved (the order alternating), the target alone producing exactly the drafter's tokens; the
median of the pairs' ratios and its distribution-free 95% interval.

One pair is one pass over the later requests: the drafter decodes each in order (tokens and engine seconds summed),
the target alone the same requests to the same lengths. Suffix decoding starts every pass from the same store: the
first request's greedy output (as if it had just decoded it), then what it records itself as the pass goes on; so
each pass times the workload as a first user would run it, never a repeat of a request already in the store.

    python experiments/measure_suffix_speedup.py --workload customer-records [--pairs 6] [--max-new-tokens 160]
        [--drafts suffix:8,suffix-f4:8,prompt-lookup:8,prompt-lookup:4,smollm2-135m-eagle3:1]
    python experiments/measure_suffix_speedup.py --heldout 4     # held-out chat prompts (training.zoo.prompts), in order

Greedy. `suffix-f4` is suffix decoding with max_spec_factor 4 (vLLM's default is 1).
"""
from __future__ import annotations

import argparse
import itertools
import json
import platform
from dataclasses import replace
from pathlib import Path

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec import DecodeSettings, generate, load_model, start
from specdec.drafters import registry, suffix
from specdec.drafters.suffix import SuffixDrafter
from specdec.measure.speedup import Measurement, Policy, Timing, measure
from specdec.models.prompting import encode_prompt

ROOT = Path(__file__).resolve().parents[1]
DRAFTS = "suffix:8,suffix-f4:8,prompt-lookup:8,prompt-lookup:4,smollm2-135m-eagle3:1"
FRESH = itertools.count()


def cpu_name() -> str:
    """The CPU's model name, as lscpu prints it."""
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else ():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def requests_of(args) -> list[str]:
    if args.heldout:
        from training.zoo.prompts import heldout_prompts

        return heldout_prompts(per_kind=args.heldout)["chat"]
    return json.loads((ROOT / "assets" / "workloads" / f"{args.workload}.json").read_text())


def suffix_factory(target, first_output: list[int], **options):
    """A new suffix drafter per pass, its store holding only the first request's output."""
    def fresh() -> SuffixDrafter:
        drafter = SuffixDrafter(target.real_vocab_size, target.device, f"{target.name} timed {next(FRESH)}", **options)
        drafter.store.record(next(suffix.REQUESTS), None, first_output)
        return drafter
    return fresh


def contestants(target, make_drafter, later: list[list[int]], outputs: list[list[int]], settings: DecodeSettings):
    """(lead, follow) for measure: one pass of the drafter over the later requests; the target alone on the same."""
    lengths = [len(output) for output in outputs]

    def lead() -> Timing:
        drafter, tokens, seconds, forwards = make_drafter(), 0, 0.0, 0
        for ids, output in zip(later, outputs):
            run = generate(target, drafter, ids, settings)
            assert run.token_ids == output, "a drafter's greedy output differs from the target's"
            tokens, seconds = tokens + run.metrics.new_tokens, seconds + run.metrics.wall_time_s
            forwards += run.metrics.target_forwards
        return Timing(tokens, seconds, detail=tokens / forwards)  # tokens per target forward (the same every pass)

    def follow(n: int) -> Timing:
        tokens, seconds = 0, 0.0
        for ids, length in zip(later, lengths):
            run = start(target, None, ids, replace(settings, max_new_tokens=length), ignore_eos=True).result()
            tokens, seconds = tokens + run.metrics.new_tokens, seconds + run.metrics.wall_time_s
        assert tokens == n
        return Timing(tokens, seconds)

    return lead, follow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="smollm2-135m-instruct")
    parser.add_argument("--workload", default="customer-records")
    parser.add_argument("--heldout", type=int, default=0, help="N: the first N held-out chat prompts instead")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--drafts", default=DRAFTS, help="name:K,… (suffix-f4: max_spec_factor 4)")
    args = parser.parse_args()
    target = load_model(args.target)
    prompts = [encode_prompt(target, text, chat=True) for text in requests_of(args)]
    greedy = DecodeSettings(max_new_tokens=args.max_new_tokens)
    outputs = [generate(target, None, ids, greedy).token_ids for ids in prompts]
    later = prompts[1:]
    policy = Policy(min_repeats=args.pairs, floor_repeats=args.pairs, max_repeats=args.pairs, budget_s=1e9,
                    hard_budget_s=1e9)
    name = f"held-out chat ({len(prompts)})" if args.heldout else args.workload
    print(f"{name}: {len(later)} later requests, {sum(len(o) for o in outputs[1:])} tokens; {cpu_name()}")
    print("| workload | drafter | K | tokens per target forward | speedup (95% interval) |\n|---|---|---|---|---|")
    for item in args.drafts.split(","):
        draft, k = item.rsplit(":", 1)
        settings = replace(greedy, k=int(k))
        if draft.startswith("suffix"):
            make = suffix_factory(target, outputs[0], max_spec_factor=4.0 if draft == "suffix-f4" else 1.0)
        else:
            drafter = registry.load_drafter(draft, target)
            make = lambda drafter=drafter: drafter  # stateless across requests: one for every pass
        lead, follow = contestants(target, make, later, outputs[1:], settings)
        measurement = Measurement()
        for est in measure(lead, follow, policy, measurement=measurement):
            pass
        per_forward = measurement.pairs[-1].lead.detail
        print(f"| {name} | {draft} | {k} | {per_forward:.2f} | {est.describe()} |", flush=True)


if __name__ == "__main__":
    main()
