"""The figures of a vLLM run in words, shared by the CLI and the app: the lab's acceptance figures from the
coloured steps, vLLM's own per-request figures beside them, and the measured speedup.

How vLLM's figures map to the lab's (docs/vllm.md):
  vLLM draft_acceptance_rate = accepted / drafted                 = the lab's acceptance rate
  vLLM mean_acceptance_length = 1 + accepted / verification steps = tokens per verification step, bonus or
      correction included; the lab's "tokens per target forward" also counts the prefill's token and the
      plain steps where the drafter proposed nothing (ngram without a match), so it is lower or equal.
  α (accepted / evaluated): the lab's; vLLM does not report it; it follows from per_step_accepted/drafted
      (a step evaluates its accepted drafts and the first rejected one).
  per-position acceptance: vLLM's num_accepted_tokens_per_pos[i] / num_drafts, the lab's "accepted /
      drafted at position i" (equal when every step drafts K).
"""
from __future__ import annotations

from dataclasses import asdict

from specdec.engine.theory import measured_alpha, position_counts

NOT_AVAILABLE = ("not available from vLLM: the draft's q, the target's p, the uniform draws, and (but for ngram, "
                 "whose drafting the lab replays) the rejected draft tokens' ids")


def acceptance_by_position_text(events) -> str:
    rows = position_counts(events)
    if not rows:
        return "acceptance by position: nothing drafted"
    return "acceptance by position (accepted / drafted): " + ", ".join(
        f"{i + 1}: {accepted / drafted:.2f} ({accepted}/{drafted})" for i, drafted, _, accepted in rows if drafted)


def vllm_figures_text(spec) -> str:
    """vLLM's own per-request figures, named as vLLM names them."""
    if not spec:
        return "vLLM's per-request figures: none (a server without speculation)"
    return (f"vLLM's figures: mean acceptance length {spec.get('mean_acceptance_length', 0):.2f} (1 + accepted / "
            f"verification steps, bonus included), draft acceptance rate {spec.get('draft_acceptance_rate', 0):.2f}, "
            f"{spec.get('num_spec_steps', 0)} verification steps, histogram of accepted per step "
            f"{spec.get('acceptance_histogram')}")


def lab_figures_text(result) -> str:
    m = result.metrics
    rate = "n/a" if m.acceptance_rate is None else f"{m.acceptance_rate:.2f}"
    alpha = measured_alpha(result.events)
    alpha_text = "n/a" if alpha is None else f"{alpha:.2f}"
    return (f"{m.new_tokens} tokens in {m.wall_time_s:.2f} s ({m.tokens_per_s:.1f} tok/s, as the client sees it: "
            f"prefill and HTTP included); acceptance rate (accepted / drafted) {rate} ({m.accepted_tokens} of "
            f"{m.drafted_tokens}); α (accepted / evaluated) {alpha_text}; "
            f"{m.tokens_per_forward or 0:.2f} tokens per target forward ({m.target_forwards} forwards: the "
            f"prefill, every verification step and every plain step)")


def alignment_text(alignment) -> str:
    if alignment.exact:
        return "step boundaries: exact (vLLM's per-step record and its stream fit one way only)"
    return ("step boundaries: one-token steps that drafted nothing (plain steps) and one-token steps whose drafts "
            "were all rejected fit the stream in more than one order; the order shown is one of them")


def speedup_text(estimate) -> str:
    if estimate is None:
        return "speedup: not measured (give --vllm-baseline-url, a server of the same target without speculation)"
    verdict = f" — {estimate.verdict}" if estimate.verdict else ""
    return (f"speedup vs the baseline server (measured, same tokens per pair, interleaved): {estimate.describe()}"
            f"{verdict}; speculative {estimate.lead_tokens_per_s or 0:.1f} tok/s, baseline "
            f"{estimate.follow_tokens_per_s or 0:.1f} tok/s (medians)")


def acceptance_lines(done, estimate=None) -> list[str]:
    """Every figure of a vLLM run, one per line (the CLI prints them on stderr)."""
    return [lab_figures_text(done.result), acceptance_by_position_text(done.result.events),
            vllm_figures_text(done.spec), alignment_text(done.alignment), NOT_AVAILABLE, speedup_text(estimate)]


def server_lines(info, baseline_info=None) -> list[str]:
    lines = [f"speculative server: {info.describe()}"]
    if baseline_info is not None:
        lines.append(f"baseline server: {baseline_info.describe()}")
    return lines


def run_record(done, lead, baseline=None, counters=None, rss_bytes=None) -> dict:
    """vLLM's side of a run for the JSON exports (the CLI's --json, the app's trace): vLLM's per-request record as
    sent, whether the step boundaries are exact, both servers' descriptions, the server-wide /metrics counters
    read after the run, and the server's resident memory (None: not exposed by the server's API)."""
    return {"engine": "vllm", "vllm_speculative_decoding": done.spec,
            "vllm_record_shape": (done.spec or {}).get("shape"), "alignment_exact": done.alignment.exact,
            "server": asdict(lead.info), "baseline_server": asdict(baseline.info) if baseline else None,
            "server_counters_after_run": asdict(counters) if counters is not None else None,
            "server_rss_bytes": rss_bytes, "not_available": NOT_AVAILABLE}


def counters_text(counters) -> str:
    """vLLM's server-wide counters (/metrics: every request since the server started) in words."""
    if counters is None:
        return "no spec_decode counters in /metrics"
    rate, length = counters.draft_acceptance_rate, counters.mean_acceptance_length
    per_pos = ", ".join(f"{i + 1}: {n / counters.drafts:.2f}" for i, n in enumerate(counters.accepted_per_pos)
                        if counters.drafts)
    return (f"since the server started: {counters.drafts:.0f} drafts, {counters.draft_tokens:.0f} draft tokens, "
            f"{counters.accepted:.0f} accepted; draft acceptance rate {'–' if rate is None else f'{rate:.2f}'}, "
            f"mean acceptance length {'–' if length is None else f'{length:.2f}'}; accepted per draft by position "
            f"{per_pos or '–'}")
