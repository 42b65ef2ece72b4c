"""Lab engine vs vLLM on the same held-out prompts, greedy: acceptance with the same draft and K, and
target-only tokens/s at batch 1 (docs/vllm.md, "Lab engine vs vLLM").

    python experiments/compare_vllm.py --draft-url URL --baseline-url URL [--k 3] [--per-kind 2] [--tokens 64]

--draft-url: a vLLM server running draft_model with the exported zoo draft (`python -m specdec vllm serve
--method draft_model --draft smollm2-135m-draft --k 3 --baseline --dtype float32`); --baseline-url: the same
target without speculation. The lab runs the same exported folder as a plain draft model (the same network,
its whole vocabulary) and, for reference, the zoo drafter itself (its 12,288-token draft vocabulary). A zoo head
(--lab-draft smollm2-135m-eagle or -eagle3) drafts from its draft vocabulary plus its text's ids, which vLLM's
eagle methods cannot (their vocabulary is fixed): it is run both ways, the second like vLLM. Prompt ids
are the lab's chat-template encoding, sent to vLLM as ids, so both engines see the same tokens.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import specdec  # noqa: F401  (first: the package sets the process up before torch starts)
from specdec.engine.events import DecodeSettings
from specdec.engine.theory import position_counts
from specdec.measure.speedup import Policy, Timing, measure
from specdec.vllm import engine as vllm_engine
from specdec.vllm.export import export_draft
from specdec.vllm.launcher import record_for

from training.zoo.prompts import heldout_prompts

PAIRS = Policy(min_repeats=10, floor_repeats=10, max_repeats=10, tolerance=0.0, budget_s=0.0, hard_budget_s=0.0)


def figures(events) -> dict:
    """Per-position acceptance (accepted / drafted at i) and mean acceptance length as vLLM defines it:
    1 + accepted / verification steps (steps that drafted something)."""
    steps = [e for e in events if e.k > 0]
    accepted = sum(e.num_accepted for e in steps)
    return {"positions": [round(a / d, 3) if d else None for _, d, _, a in position_counts(events)],
            "mean_acceptance_length": 1 + accepted / len(steps) if steps else None,
            "accepted": accepted, "steps": len(steps), "tokens": sum(len(e.emitted_ids) for e in events)}


def pooled(rows: list[dict]) -> dict:
    steps = sum(r["steps"] for r in rows)
    accepted = sum(r["accepted"] for r in rows)
    return {"mean_acceptance_length": 1 + accepted / steps if steps else None, "steps": steps}


def pooled_positions(all_events: list[list]) -> list:
    return figures([e for events in all_events for e in events])["positions"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draft-url", default=None)
    parser.add_argument("--baseline-url", required=True)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--dtype", default="float32", help="the lab target's dtype (auto: the measured path)")
    parser.add_argument("--lab-draft", default="smollm2-135m-draft", help="the lab's zoo drafter to compare "
                        "(smollm2-135m-draft, or smollm2-135m-eagle against a vLLM eagle server)")
    parser.add_argument("--target-only", action="store_true", help="only the target-only tokens/s comparison")
    parser.add_argument("--settle", type=float, default=1.5, help="seconds of quiet before each timed run of the "
                        "target-only comparison (0: back to back)")
    args = parser.parse_args()

    base = vllm_engine.connect(args.baseline_url, speculative=False, record_for=record_for)
    target = specdec.load_model("smollm2-135m-instruct", dtype=args.dtype)
    settings = DecodeSettings(max_new_tokens=args.tokens, k=args.k, temperature=0.0)
    if args.target_only:
        print(json.dumps(target_only(target, base, heldout_prompts(per_kind=1)["chat"][0], settings, args.settle), indent=1))
        return 0
    lead = vllm_engine.connect(args.draft_url, speculative=True, record_for=record_for)
    drafters = {"lab (zoo drafter)": specdec.load_drafter(args.lab_draft, target)}
    if hasattr(drafters["lab (zoo drafter)"], "head_rows"):  # a head: vLLM's drafts from its draft vocabulary alone
        like_vllm = specdec.load_drafter(args.lab_draft, target)
        like_vllm.head_rows.follows_context = False
        drafters["lab (zoo drafter, draft vocabulary only, as vLLM drafts)"] = like_vllm
    if args.lab_draft == "smollm2-135m-draft":  # the exported folder as a plain draft model: vLLM's network
        drafters["lab (exported draft)"] = specdec.load_drafter(str(export_draft(args.lab_draft)), target)
    rows = {name: [] for name in [*drafters, "vllm"]}
    events = {name: [] for name in rows}
    same_text = []
    for kind, prompts in heldout_prompts(per_kind=args.per_kind).items():
        for prompt in prompts:
            ids = specdec.encode_prompt(target, prompt, chat=True)
            runs = {name: specdec.generate(target, drafter, ids, settings).events for name, drafter in drafters.items()}
            runs["vllm"] = vllm_engine.run(lead, ids, settings).result.events
            for name, evs in runs.items():
                rows[name].append({"kind": kind, **figures(evs)})
                events[name].append(evs)
            same_text.append([t for e in runs["vllm"] for t in e.emitted_ids] ==
                             [t for e in runs["lab (zoo drafter)"] for t in e.emitted_ids])
    report = {name: {"pooled": pooled(r), "positions": pooled_positions(events[name]),
                     "per_prompt": [(r_["kind"], round(r_["mean_acceptance_length"] or 0, 2)) for r_ in r]}
              for name, r in rows.items()}
    report["same_tokens_lab_vs_vllm"] = same_text
    report["target_only"] = target_only(target, base, heldout_prompts(per_kind=1)["chat"][0], settings, args.settle)
    print(json.dumps(report, indent=1))
    return 0


def target_only(target, base, prompt, settings, settle_s: float) -> dict:
    """Lab target-only vs vLLM's baseline server, batch 1, interleaved pairs over the same tokens; each run starts
    settle_s after the previous one ended (vLLM's CPU worker keeps one core busy for ~1 s after a request:
    docs/vllm.md, "Target-only tokens/s")."""
    ids = specdec.encode_prompt(target, prompt, chat=True)

    def lab_run() -> Timing:
        time.sleep(settle_s)  # not timed: the machine quiet again (vLLM's worker spins on after its request)
        result = specdec.Generation(target, None, ids, settings, ignore_eos=True).result()
        return Timing(result.metrics.new_tokens, result.metrics.wall_time_s)

    def vllm_run(tokens: int) -> Timing:
        time.sleep(settle_s)
        done = base.client.complete(ids, tokens, exact_tokens=True)
        return Timing(len(done.token_ids), done.wall_s)

    for est in measure(lab_run, vllm_run, PAIRS):
        pass
    return {"lab_path": target.tuned.label if target.tuned else f"{target.dtype}", "lab_runner": target.runner_kind,
            "settle_s": settle_s, "lab_tokens_per_s": est.lead_tokens_per_s, "vllm_tokens_per_s": est.follow_tokens_per_s,
            "ratio": est.describe(), "verdict": est.verdict, "tokens": est.new_tokens}


if __name__ == "__main__":
    sys.exit(main())
