"""Suffix decoding against prompt lookup on workloads whose requests repeat structure (assets/workloads/): each
workload's prompts in order in one process, greedy, one suffix drafter for the whole workload (so it learns from the
earlier requests' outputs, and only that workload's: a store of its own), prompt lookup on the same requests, and the target alone for the output each must equal.
Tokens per target forward per request (machine-independent; no timing).

    python experiments/measure_suffix.py [--target smollm2-135m-instruct] [--k 8] [--max-new-tokens 160] [--workloads code-edits,…]
        [--max-spec-factor 1.0] [--min-token-prob 0.1] [--max-cached-requests 10000] [--split]

Last, per workload, the later requests (every one but the first) pooled: all their tokens / all their forwards.
--split: this request and the store searched apart, the better-scored draft taken (Arctic Inference's way).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec import DecodeSettings, generate, load_model
from specdec.drafters import registry
from specdec.drafters.suffix import MAX_CACHED_REQUESTS, MAX_SPEC_FACTOR, MIN_TOKEN_PROB, SuffixDrafter
from specdec.models.prompting import encode_prompt

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = sorted((ROOT / "assets" / "workloads").glob("*.json"))


def measure(target, workload: Path, settings: DecodeSettings, split: bool = False, **suffix_options) -> list[dict]:
    """One row per request; suffix_options: SuffixDrafter's parameters (vLLM's defaults where not given)."""
    prompts = [encode_prompt(target, text, chat=True) for text in json.loads(workload.read_text())]
    suffix = SuffixDrafter(target.real_vocab_size, target.device, f"{target.name}-{workload.stem}", **suffix_options)
    suffix.split = split
    drafters = {"suffix": suffix, "prompt-lookup": registry.load_drafter("prompt-lookup", target)}
    rows = []
    for request, ids in enumerate(prompts):
        alone = generate(target, None, ids, settings).token_ids
        runs = {name: generate(target, drafter, ids, settings) for name, drafter in drafters.items()}
        row = {"workload": workload.stem, "request": request, "tokens": len(alone),
               "identical": all(run.token_ids == alone for run in runs.values())}
        row.update({name: run.metrics.tokens_per_forward for name, run in runs.items()})
        row.update({f"{name} forwards": run.metrics.target_forwards for name, run in runs.items()})
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="smollm2-135m-instruct")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--workloads", default="", help="comma-separated names (default: every file)")
    parser.add_argument("--max-spec-factor", type=float, default=MAX_SPEC_FACTOR)
    parser.add_argument("--min-token-prob", type=float, default=MIN_TOKEN_PROB)
    parser.add_argument("--max-cached-requests", type=int, default=MAX_CACHED_REQUESTS,
                        help="0: no store (each request drafts from itself alone)")
    parser.add_argument("--split", action="store_true", help="request and store searched apart (Arctic's way)")
    args = parser.parse_args()
    chosen = [w for w in WORKLOADS if not args.workloads or w.stem in args.workloads.split(",")]
    target = load_model(args.target)
    settings = DecodeSettings(max_new_tokens=args.max_new_tokens, k=args.k)
    print("| workload | request | tokens | suffix | prompt lookup | ratio | identical |")
    print("|---|---|---|---|---|---|---|")
    later = {}
    for workload in chosen:
        rows = measure(target, workload, settings, split=args.split, max_spec_factor=args.max_spec_factor,
                       min_token_prob=args.min_token_prob, max_cached_requests=args.max_cached_requests)
        for row in rows:
            ratio = row["suffix"] / row["prompt-lookup"]
            print(f"| {row['workload']} | {row['request']} | {row['tokens']} | {row['suffix']:.2f} | "
                  f"{row['prompt-lookup']:.2f} | {ratio:.2f} | {row['identical']} |", flush=True)
        later[workload.stem] = rows[1:]
    print("\n| workload | later requests: suffix | prompt lookup | suffix / lookup | identical |\n|---|---|---|---|---|")
    for name, rows in later.items():
        tokens = sum(row["tokens"] for row in rows)
        per = {d: tokens / max(1, sum(row[f"{d} forwards"] for row in rows)) for d in ("suffix", "prompt-lookup")}
        print(f"| {name} | {per['suffix']:.2f} | {per['prompt-lookup']:.2f} | "
              f"{per['suffix'] / per['prompt-lookup']:.2f} | {all(row['identical'] for row in rows)} |")


if __name__ == "__main__":
    main()
