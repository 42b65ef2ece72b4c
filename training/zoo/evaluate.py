"""Held-out measurement of the zoo drafters for their model cards.

For each prompt kind (chat prose, code, rewriting: prompts.heldout_prompts, never trained on) and each
setting (K = 4 greedy, K = 4 at T = 0.7), every drafter generates through the engine
(specdec.engine.decoding.Generation) and is compared with the target alone on the same prompt and settings.

Figures per drafter and kind:
  acceptance          accepted drafted tokens / drafted tokens
  tokens_per_forward  emitted tokens / target decode forwards (bonus and resampled tokens included; plain = 1.00)
  c                   draft time per drafted token / target time per verification forward (medians of
                      per-step times; for Medusa all K tokens come from one call, divided by K)
  speedup             (new tokens / wall time) with the drafter over the target alone's, median over
                      prompts; the target-only runs (greedy, NEW_TOKENS tokens, past an end-of-text token of
                      their own) come before and after the drafters' runs on each prompt and their mean rate
                      is used, so drift on a shared machine hits both alike
Also, on chat prompts, greedy speedup at K = 1 and 2 besides 4 (the "best K" of the cards).
"""
from __future__ import annotations

import statistics
from dataclasses import replace

from specdec.engine.events import DecodeSettings

NEW_TOKENS = 32
SETTINGS = {"greedy": DecodeSettings(max_new_tokens=NEW_TOKENS, k=4, temperature=0.0, seed=0),
            "T0.7": DecodeSettings(max_new_tokens=NEW_TOKENS, k=4, temperature=0.7, seed=0)}


def _baseline_rate(target, prompt_ids, settings) -> float:
    from specdec.engine.decoding import Generation

    result = Generation(target, None, prompt_ids, settings, ignore_eos=True).result()
    return result.metrics.new_tokens / result.metrics.wall_time_s


def _run(target, drafter, prompt_ids, settings):
    from specdec.engine.decoding import Generation

    return Generation(target, drafter, prompt_ids, settings).result()


def step_cost_ratio(result) -> float | None:
    """Draft time per drafted token over target time per verification forward (medians over steps)."""
    draft, verify = [], []
    for e in result.events:
        n = len(e.drafted)
        if n and getattr(e, "draft_time_s", None) is not None:
            draft.append(e.draft_time_s / n)
            verify.append(e.verify_time_s)
    if not draft:
        return None
    return statistics.median(draft) / statistics.median(verify)


def evaluate(target, drafters: dict, prompts: dict[str, list[list[int]]], settings: dict = SETTINGS,
             extra_ks: tuple[int, ...] = (1, 2), log=print) -> dict:
    """{drafter: {setting: {kind: figures}}, "best_k": {drafter: {k: speedup}}}. Per prompt: the target
    alone (greedy, past EOS), then every drafter in every setting (and at extra_ks, greedy, on chat
    prompts), then the target alone again; speedups divide by the mean rate of the two target-only runs
    (sampling at T=0.7 costs the target-only loop the same per token as greedy, within noise)."""
    out = {name: {s: {} for s in settings} for name in drafters}
    ks_rows = {name: {} for name in drafters}
    for kind, plist in prompts.items():
        rows = {(name, s): [] for name in drafters for s in settings}
        for prompt_ids in plist:
            greedy = next(iter(settings.values()))
            before = _baseline_rate(target, prompt_ids, greedy)
            results = {(n, s): _run(target, d, prompt_ids, st) for n, d in drafters.items() for s, st in settings.items()}
            extra = {}
            if kind == "chat":
                extra = {(n, k): _run(target, d, prompt_ids, replace(greedy, k=k)) for n, d in drafters.items()
                         for k in extra_ks}
            after = _baseline_rate(target, prompt_ids, greedy)
            base = (before + after) / 2
            for (name, sname), r in results.items():
                m = r.metrics
                rows[(name, sname)].append({
                    "new_tokens": m.new_tokens, "drafted": m.drafted_tokens, "accepted": m.accepted_tokens,
                    "target_forwards": m.target_forwards, "tokens_per_s": m.new_tokens / m.wall_time_s,
                    "baseline_tokens_per_s": base, "speedup": m.new_tokens / m.wall_time_s / base,
                    "c": step_cost_ratio(r),
                })
                if kind == "chat" and sname == "greedy":
                    ks_rows[name].setdefault(greedy.k, []).append(m.new_tokens / m.wall_time_s / base)
            for (name, k), r in extra.items():
                ks_rows[name].setdefault(k, []).append(r.metrics.new_tokens / r.metrics.wall_time_s / base)
            log(f"{kind}: " + ", ".join(f"{n} {rows[(n, 'greedy')][-1]['speedup']:.2f}x" for n in drafters)
                + f" (greedy K=4; target alone {base:.1f} tok/s)")
        for (name, sname), rs in rows.items():
            drafted = sum(r["drafted"] for r in rs)
            cs = [r["c"] for r in rs if r["c"] is not None]
            out[name][sname][kind] = {
                "prompts": len(rs),
                "acceptance": sum(r["accepted"] for r in rs) / drafted if drafted else None,
                "tokens_per_forward": sum(r["new_tokens"] for r in rs) / max(1, sum(r["target_forwards"] for r in rs)),
                "c": statistics.median(cs) if cs else None,
                "speedup": statistics.median(r["speedup"] for r in rs),
                "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rs),
                "baseline_tokens_per_s": statistics.median(r["baseline_tokens_per_s"] for r in rs),
                "rows": rs,
            }
    best = {n: {k: statistics.median(v) for k, v in sorted(ks.items())} for n, ks in ks_rows.items()}
    for n, b in best.items():
        log(f"greedy chat speedup by K, {n}: " + ", ".join(f"K={k} {v:.2f}x" for k, v in b.items()))
    return {"figures": out, "best_k": best}
