"""A finished run as plain data for the browser: the What-if panel's measured point and the replay of its
draft→verify cycles (tabs/whatif/callbacks.py sends it once; whatif.js draws and steps through it with no server
call).

Plain functions over StepEvents (engine/events.py) and the session's RunView: lists, dicts, floats, no tensors.
"""
from __future__ import annotations

from typing import Optional

from specdec.engine import theory


def replay_steps(events) -> list[dict]:
    """Every step of a trace with what the replay shows: each drafted token with q, p, min(1, p/q), the draw u
    and its fate (accepted | rejected | unchecked), the target's final token (resampled | bonus | target) and, for
    a tree step, its nodes."""
    return [{
        "index": e.index,
        "mode": e.mode,
        "k": e.k,
        "accepted": e.num_accepted,
        "drafted": [{"text": d.text, "q": d.q, "p": d.p, "a": d.accept_prob, "u": d.uniform, "fate": d.fate}
                    for d in e.drafted],
        "final": None if e.final is None else {"text": e.final.text, "kind": e.final.kind, "p": e.final.p},
        "tree": [{"text": n.text, "parent": n.parent, "kept": n.kept, "evaluated": n.evaluated} for n in e.tree],
    } for e in events]


def accepted_lengths(events, k: int) -> list[int]:
    """How many steps accepted 0, 1, …, k drafts, over the steps that drafted exactly k (the full K)."""
    counts = [0] * (k + 1)
    for e in events:
        if e.k == k and k > 0:
            counts[min(e.num_accepted, k)] += 1
    return counts


def measured_costs(view) -> tuple[Optional[float], Optional[float]]:
    """(c, v(K)) of the run's latest timed pair (its speculative and target-only runs); (None, None) before one."""
    spec, base = getattr(view, "measured", None), getattr(view, "baseline", None)
    if spec is None or base is None:
        return None, None
    k = view.result.settings.k
    return theory.cost_ratio(spec.events, base.events), theory.verify_cost_ratio(spec.events, base.events, k)


def run_data(view) -> Optional[dict]:
    """What "Use my run" puts into the panel: K, α, c, v(K), the measured speedup with its interval, the accepted
    lengths and the replay; None without a run."""
    if view is None or not view.events:
        return None
    k = view.result.settings.k
    c, v = measured_costs(view)
    est = view.estimate
    return {
        "k": k,
        "alpha": theory.measured_alpha(view.events),
        "c": c,
        "v": v,
        "speedup": None if est is None else est.ratio,
        "low": None if est is None else est.low,
        "high": None if est is None else est.high,
        "repeats": 0 if est is None else est.repeats,
        "lengths": accepted_lengths(view.events, k),
        "tokens_per_forward": view.result.metrics.tokens_per_forward,
        "stopped": bool(view.stopped),
        "vllm": view.vllm is not None,
        "steps": replay_steps(view.events),
    }
