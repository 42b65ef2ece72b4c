"""Load tests gathered into one measurement (several methods and K on one machine), the dynamic rule read from it, and
the measurement shipped with the app (assets/measurements/), which the "Under load" view shows where no vLLM server is
configured (a public Space). Pure functions over the JSON objects `python -m specdec load --json` prints
(load_report.report); experiments/ship_load_measurement.py writes the shipped file.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from specdec.errors import SpecDecError
from specdec.paths import ASSETS_DIR
from specdec.vllm.load_report import KIND, method_label

SET_KIND = "specdec-vllm-load-set"
SET_FORMAT = 1
MEASUREMENTS_DIR = ASSETS_DIR / "measurements"
SHIPPED = MEASUREMENTS_DIR / "vllm-load.json"
LABELS = ("machine", "date", "commands", "notebook", "vllm", "target", "dtype")


def combine(runs: list[dict], notebook: str) -> dict:
    """One measurement from load runs made on one machine against one target: labelled with the machine, the
    commands that made it, the date of its last run, the notebook entry that reports it; the dynamic rule with it."""
    if not runs:
        raise SpecDecError("no load runs to combine")
    if any(run.get("kind") != KIND for run in runs):
        raise SpecDecError("every run must be the JSON object of `python -m specdec load --json`")
    machines = {run["machine"] for run in runs}
    targets = {run["baseline"]["root"] for run in runs}
    if len(machines) != 1 or len(targets) != 1:
        raise SpecDecError(f"the runs come from {len(machines)} machines and {len(targets)} targets: combine one of each")
    return {"kind": SET_KIND, "format": SET_FORMAT, "machine": machines.pop(), "date": max(r["date"] for r in runs),
            "commands": [r["command"] for r in runs], "notebook": notebook,
            "vllm": runs[0]["baseline"]["version"], "target": runs[0]["baseline"]["model"],
            "dtype": runs[0]["baseline"]["dtype"], "runs": runs, "dynamic_rule": dynamic_rule(runs)}


def read_measurement(path: Path = SHIPPED) -> dict:
    """A combined measurement (default: the shipped one), its labels checked; one SpecDecError line otherwise."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SpecDecError(f"cannot read the load measurement {path}: {exc}") from None
    problems = label_problems(data)
    if problems:
        raise SpecDecError(f"the load measurement {path} is not labelled: {'; '.join(problems)}")
    return data


def label_problems(data: dict) -> list[str]:
    """What a shipped measurement lacks: its kind, a label, or runs that carry their own machine, command and date."""
    if not isinstance(data, dict) or data.get("kind") != SET_KIND:
        return [f"not a {SET_KIND} object"]
    problems = [f"no {label}" for label in LABELS if not data.get(label)]
    runs = data.get("runs") or []
    if not runs:
        problems.append("no runs")
    for run in runs:
        if run.get("machine") != data.get("machine") or not run.get("command") or not run.get("date"):
            problems.append(f"the run {run.get('command', '?')[:60]!r} lacks its own machine, command or date")
    return problems


# --- read from the curves --------------------------------------------------------------------------------------

def curves(run: dict) -> dict:
    """One run as the view's series, by concurrency: each engine's tokens/s and TPOT p50/p95, the speedup and its
    interval, the crossover."""
    rows = {(r["concurrency"], r["engine"]): r for r in run["rows"]}
    cs = sorted({c for c, _ in rows})
    speedups = {s["concurrency"]: s for s in run["speedups"]}
    series = {"label": method_label(run), "concurrency": cs, "crossover": run.get("crossover")}
    for engine in ("speculative", "baseline"):
        for field in ("output_tokens_per_s", "tpot_ms_p50", "tpot_ms_p95", "ttft_ms_p50", "same_text"):
            series[f"{engine}_{field}"] = [rows[(c, engine)][field] for c in cs]
    for field in ("speedup", "low", "high"):
        series[field] = [speedups[c][field] for c in cs]
    return series


def dynamic_rule(runs: list[dict]) -> dict:
    """K by concurrency, from the measured curves: per method, at each measured concurrency the K whose speedup has the
    highest median among those whose interval lies above 1, else 0 (speculation off: no K measurably pays); and the
    same over every method. With vLLM's schedule text for each method (k_by_batch_text)."""
    by_method: dict[str, dict[int, list[tuple[int, dict]]]] = {}
    for run in runs:
        method = run["speculative"].get("method") or "speculative"
        for s in run["speedups"]:
            by_method.setdefault(method, {}).setdefault(s["concurrency"], []).append((run["speculative"]["k"], s))
    rule = {}
    for method, by_c in by_method.items():
        choices = [_choice(c, [(method, k, s) for k, s in options]) for c, options in sorted(by_c.items())]
        rule[method] = {"choices": choices, "k_by_batch": k_by_batch_text([(c["concurrency"], c["k"]) for c in choices])}
    everything: dict[int, list] = {}
    for method, by_c in by_method.items():
        for c, options in by_c.items():
            everything.setdefault(c, []).extend((method, k, s) for k, s in options)
    rule["any method"] = {"choices": [_choice(c, options) for c, options in sorted(everything.items())]}
    return rule


def _choice(concurrency: int, options: list[tuple[str, int, dict]]) -> dict:
    paying = [(m, k, s) for m, k, s in options if s.get("low") is not None and s["low"] > 1.0]
    if not paying:
        return {"concurrency": concurrency, "method": None, "k": 0, "speedup": None, "low": None, "high": None}
    method, k, s = max(paying, key=lambda option: option[2]["speedup"])
    return {"concurrency": concurrency, "method": method, "k": k, "speedup": s["speedup"], "low": s["low"],
            "high": s["high"]}


def k_by_batch_text(choices: list[tuple[int, int]], largest: int = 256) -> Optional[str]:
    """[(concurrency, K), ...] as vLLM's schedule text for `vllm serve --k-by-batch`: each measured concurrency's K
    holds from it up to the next measured one (from 1, to `largest`), equal neighbours merged; None when every K is
    0 (no speculative server needed)."""
    if not choices or all(k == 0 for _, k in choices):
        return None
    points = sorted(choices)
    starts = [1] + [c for c, _ in points[1:]]
    ends = [c - 1 for c, _ in points[1:]] + [largest]
    ranges: list[list[int]] = []
    for first, last, (_, k) in zip(starts, ends, points):
        if ranges and ranges[-1][2] == k:
            ranges[-1][1] = last
        else:
            ranges.append([first, last, k])
    return ",".join(f"{a}-{b}:{k}" for a, b, k in ranges)


# --- the cost model beside the measured points -----------------------------------------------------------------

def row_at(run: dict, engine: str, concurrency: Optional[int] = None) -> dict:
    """The run's row of `engine` at `concurrency` (default: its lowest)."""
    rows = [r for r in run["rows"] if r["engine"] == engine]
    if concurrency is None:
        concurrency = min(r["concurrency"] for r in rows)
    return next(r for r in rows if r["concurrency"] == concurrency)


def model_curve(run: dict, device, dtype: str, concurrencies=None, calibrate: bool = True):
    """batch_cost.predict_load for a run's target, drafter and K on `device`, with the tokens and drafts per step the
    run measured at its lowest concurrency; calibrate: the per-forward overhead taken from the baseline's measured
    TPOT there (a server's step, not the lab runner's), so the curve starts where the measurement does."""
    from specdec.measure import batch_cost
    from specdec.measure.cost_model import DraftShape, draft_shape, target_network

    target = target_network(run["baseline"]["model"])
    spec = run["speculative"]
    method, k = spec.get("method"), int(spec["k"])
    draft = (DraftShape(method, method, None) if method == "ngram" or not spec.get("draft")
             else draft_shape(Path(spec["draft"]).name, target))
    low = row_at(run, "speculative")
    overhead = None
    if calibrate:
        measured = row_at(run, "baseline", low["concurrency"])["tpot_ms_p50"] / 1e3
        overhead = batch_cost.calibrated_overhead(target, device, dtype, measured)
    tokens = min(max(1.0, low["tokens_per_step"]), 1.0 + low["drafted_per_step"])
    return batch_cost.predict_load(target, draft, device, dtype, k, tokens,
                                   concurrencies or batch_cost.CONCURRENCIES, overhead_s=overhead,
                                   drafted_per_step=low["drafted_per_step"])
