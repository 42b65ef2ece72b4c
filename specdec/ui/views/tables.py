"""pandas views of a run (steps table, per-token trace) and their CSV / JSON export."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd

STEP_COLUMNS = ["step", "K", "drafted", "accepted", "final", "final kind", "emitted",
                "draft ms", "verify ms", "other ms", "tree nodes", "decision"]
TRACE_COLUMNS = ["step", "position", "role", "fate", "token_id", "text", "q", "p", "accept_prob", "uniform",
                 "decision", "decision why"]


def empty_table(columns) -> pd.DataFrame:
    """A table with its headers and no rows (shown before the first run, instead of "1 2 3")."""
    return pd.DataFrame(columns=list(columns))


def _final_kind(event) -> str:
    return event.final.kind if event.final else ("stop: " + (event.stop_reason or "?"))


def steps_dataframe(events) -> pd.DataFrame:
    """One row per step: what was drafted, how much was accepted, what the target added, timings."""
    rows = [{
        "step": e.index,
        "K": e.k,
        "drafted": " | ".join(repr(d.text)[1:-1] for d in e.drafted),
        "accepted": e.num_accepted,
        "final": repr(e.final.text)[1:-1] if e.final else "",
        "final kind": _final_kind(e),
        "emitted": repr(e.emitted_text)[1:-1],
        "draft ms": round(e.draft_time_s * 1e3, 2),
        "verify ms": round(e.verify_time_s * 1e3, 2),
        "other ms": round(e.other_time_s * 1e3, 2),
        "tree nodes": e.tree_nodes or None,  # a tree step: nodes the target scored ("drafted": the branch shown)
        "decision": e.decision,  # the auto schedule's: speculate / off / probe ("" under other schedules)
    } for e in events]
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


def _draft_row(e, d) -> dict:
    fate = d.fate
    return {"step": e.index, "position": d.position, "role": "draft", "fate": fate, "token_id": d.token_id,
            "text": d.text, "q": d.q, "p": d.p, "accept_prob": d.accept_prob, "uniform": d.uniform,
            "decision": e.decision, "decision why": e.decision_why}


def _final_row(e) -> dict:
    f = e.final
    return {"step": e.index, "position": f.position, "role": "target", "fate": f.kind, "token_id": f.token_id,
            "text": f.text, "q": None, "p": f.p, "accept_prob": None, "uniform": None,
            "decision": e.decision, "decision why": e.decision_why}


def trace_dataframe(events) -> pd.DataFrame:
    """The full trace, one row per proposed or emitted token, with q, p, min(1,p/q) and the draw, and the auto
    schedule's decision for the token's step and why ("" under other schedules)."""
    rows = []
    for e in events:
        rows.extend(_draft_row(e, d) for d in e.drafted)
        if e.final is not None:
            rows.append(_final_row(e))
    return pd.DataFrame(rows, columns=TRACE_COLUMNS)


DEFINITIONS = {
    "acceptance_rate": "accepted drafted tokens / drafted tokens (unchecked tokens after a rejection count as drafted)",
    "alpha": "α = accepted / evaluated drafted tokens (the acceptance probability in the theory)",
    "tokens_per_target_forward": "emitted tokens / target decode forwards, bonus and resampled tokens included",
    "speedup": "median over timed pairs of (speculative tokens/s) / (target-only tokens/s); "
               "interval: distribution-free 95% interval for that median (order statistics)",
}


def baseline_record(baseline) -> dict:
    """The latest timed target-only run, for the JSON export ({} when there is none)."""
    if baseline is None:
        return {}
    m = baseline.metrics
    return {"baseline": {"draft": None, "new_tokens": m.new_tokens, "wall_time_s": m.wall_time_s,
                         "tokens_per_s": m.tokens_per_s, "note": "the latest timed target-only run"}}


def export_trace(record, folder: str | None = None, stem: str = "specdec-trace", *, extra: dict | None = None
                 ) -> list[str]:
    """Writes <stem>.csv (the per-token trace) and <stem>.json: the run's record (RunRecord.to_dict: the request,
    the settings that ran, every step, the metrics, α, the measurement with its policy), the latest target-only
    baseline, the definitions and `extra` (a vLLM run's record, specdec/vllm/report.run_record); returns both
    paths."""
    out = Path(folder or tempfile.mkdtemp(prefix="specdec-"))
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    trace_dataframe(record.events).to_csv(csv_path, index=False)
    report = {**record.to_dict(), **baseline_record(record.baseline), **(extra or {}), "definitions": DEFINITIONS}
    json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    return [str(csv_path), str(json_path)]


def export_dataframe(df: pd.DataFrame, stem: str, folder: str | None = None) -> str:
    path = Path(folder or tempfile.mkdtemp(prefix="specdec-")) / f"{stem}.csv"
    df.to_csv(path, index=False)
    return str(path)
