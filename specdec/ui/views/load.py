"""What the "Under load" tab shows of a load measurement (the JSON of `python -m specdec load`, one run, or the shipped
set of runs: specdec/vllm/load_shipped.py): throughput and per-request latency against concurrency, speculative
against baseline; the speedup with its interval and the batch cost model's predicted curves over it; the crossover
marked on every plot and said in words; where the measurement comes from; a few requests of the batch coloured by
fate; the rows as a table and as CSV/JSON files. Plain functions of the record: nothing here reads a widget.

One colour per engine everywhere: speculative in the lab's speculative blue (solid, circles), baseline in the
target-only grey (dashed, squares), predictions in the theory purple and the palette (dotted, no markers)."""
from __future__ import annotations

import json
import tempfile
from html import escape
from pathlib import Path
from typing import Optional

from specdec.ui.views.plots import COLORS, PALETTE, style_figure
from specdec.ui.views.render import render_legend, render_tokens
from specdec.vllm.load_report import csv_text, method_label, sample_events

import pandas as pd
import plotly.graph_objects as go

ENGINE_STYLE = {"speculative": ("speculative", COLORS["spec"], "solid", "circle"),
                "baseline": ("baseline (no speculation)", COLORS["target"], "dash", "square")}
CROSSOVER_COLOR = COLORS["rejected"]
TABLE_COLUMNS = ["concurrency", "engine", "tok/s", "TPOT p50 ms", "TPOT p95 ms", "TTFT p50 ms", "requests",
                 "acceptance", "mean acc. length", "same text", "speedup (95% interval)"]
STYLE = ("<style>.load-summary { font-size: 1.1em; line-height: 1.45; margin: 6px 0; } "
         ".load-source { font-size: 0.92em; color: #555; } .load-source code { white-space: pre-wrap; "
         "word-break: break-all; } body.projector .load-summary { font-size: 24px; } "
         ".load-request { margin: 6px 0 10px; }</style>")
FATES_SHOWN = ("accepted", "resampled", "bonus", "target")  # what vLLM's record tells apart (no rejected ids)


# --- the curves -------------------------------------------------------------------------------------------------

def rows_of(run: dict, engine: str) -> list[dict]:
    return sorted((r for r in run["rows"] if r["engine"] == engine), key=lambda r: r["concurrency"])


def _concurrency_axis(fig: go.Figure, run: dict) -> None:
    cs = sorted({r["concurrency"] for r in run["rows"]})
    fig.update_xaxes(type="log", tickvals=cs, ticktext=[str(c) for c in cs])


def mark_crossover(fig: go.Figure, run: dict) -> go.Figure:
    """A vertical line at the run's crossover, labelled; nothing where there is none."""
    c = run.get("crossover")
    if c is not None:
        fig.add_vline(x=c, line=dict(color=CROSSOVER_COLOR, dash="dash", width=2),
                      annotation_text=f"crossover: c = {c}", annotation_position="top left",
                      annotation_font_color=CROSSOVER_COLOR)
    return fig


def _engine_traces(fig: go.Figure, run: dict, field: str, upper: Optional[str] = None) -> go.Figure:
    for engine, (label, colour, dash, marker) in ENGINE_STYLE.items():
        rows = rows_of(run, engine)
        error = None
        if upper:  # an upward bar to the upper quantile
            error = dict(type="data", symmetric=False, array=[(r[upper] or 0) - (r[field] or 0) for r in rows],
                         arrayminus=[0] * len(rows), color=colour, thickness=1.2, width=4)
        fig.add_trace(go.Scatter(x=[r["concurrency"] for r in rows], y=[r[field] for r in rows], name=label,
                                 mode="lines+markers", line=dict(color=colour, dash=dash, width=3),
                                 marker=dict(symbol=marker, size=9, color=colour), error_y=error))
    _concurrency_axis(fig, run)
    return mark_crossover(fig, run)


def throughput_figure(run: dict) -> go.Figure:
    """Output tokens/s of all requests together against concurrency, each engine."""
    fig = _engine_traces(go.Figure(), run, "output_tokens_per_s")
    return style_figure(fig, f"Throughput, {method_label(run)}", "concurrent requests",  # short: a phone's width
                        "output tokens/s (all requests)")


def latency_figure(run: dict) -> go.Figure:
    """Time per output token of one request (median, bar up to the 95th percentile) against concurrency."""
    fig = _engine_traces(go.Figure(), run, "tpot_ms_p50", upper="tpot_ms_p95")
    return style_figure(fig, "Time per output token (p50, bar to p95)", "concurrent requests",
                        "ms per output token")


def speedup_figure(run: dict, predictions: list[tuple[str, dict]] = ()) -> go.Figure:
    """The measured speedup (median of the pairs, bars: its 95% interval) with the cost model's predicted curves
    (LoadCurve.to_dict() objects, each with its label) and the line at 1×."""
    fig = go.Figure()
    for i, (label, curve) in enumerate(predictions):
        points = curve["points"]
        fig.add_trace(go.Scatter(x=[p["concurrency"] for p in points], y=[p["speedup"] for p in points],
                                 name=f"predicted: {label}", mode="lines",
                                 line=dict(color=COLORS["theory"] if i == 0 else PALETTE[(i + 4) % len(PALETTE)],
                                           dash="dot", width=2.5)))
    speedups = sorted(run["speedups"], key=lambda s: s["concurrency"])
    fig.add_trace(go.Scatter(
        x=[s["concurrency"] for s in speedups], y=[s["speedup"] for s in speedups], name="measured (95% interval)",
        mode="markers", marker=dict(symbol="circle", size=10, color=COLORS["spec"]),
        error_y=dict(type="data", symmetric=False, color=COLORS["spec"], thickness=1.5, width=5,
                     array=[(s["high"] - s["speedup"]) if s.get("high") is not None else 0 for s in speedups],
                     arrayminus=[(s["speedup"] - s["low"]) if s.get("low") is not None else 0 for s in speedups])))
    fig.add_hline(y=1.0, line=dict(color=COLORS["target"], dash="dot"), annotation_text="1× (no gain)",
                  annotation_position="bottom right")
    fig.update_xaxes(type="log", tickvals=[2 ** i for i in range(9)], ticktext=[str(2 ** i) for i in range(9)])
    mark_crossover(fig, run)
    return style_figure(fig, "Speedup against concurrency: measured, and the cost model's prediction",
                        "concurrent requests", "speculative / baseline tok/s", height=340)


# --- in words -----------------------------------------------------------------------------------------------------

def _interval(s: dict) -> str:
    if s.get("low") is None:
        return f"{s['speedup']:.2f}× (no interval)"
    return f"{s['speedup']:.2f}× ({s['low']:.2f}–{s['high']:.2f})"


def crossover_text(run: dict) -> str:
    """Where speculation stops paying, in one sentence: the crossover and its speedup, or that there is none."""
    speedups = sorted(run["speedups"], key=lambda s: s["concurrency"])
    c = run.get("crossover")
    label = method_label(run)
    if c is None:
        last = speedups[-1]
        return (f"{label}: no crossover up to {last['concurrency']} concurrent requests: no speedup interval lies at "
                f"or below 1× (at {last['concurrency']}: {_interval(last)}).")
    at = next(s for s in speedups if s["concurrency"] == c)
    return (f"{label} stops paying at {c} concurrent request{'s' if c != 1 else ''}: the speedup there is "
            f"{_interval(at)}, its whole interval at or below 1×.")


def summary_html(run: dict, predictions: list[tuple[str, dict]] = ()) -> str:
    """The crossover, the speedup at each concurrency, the predicted crossovers and whether greedy texts matched."""
    speedups = ", ".join(f"{s['concurrency']}: {_interval(s)}" for s in sorted(run["speedups"],
                                                                             key=lambda s: s["concurrency"]))
    predicted = "; ".join(f"{label}: {'none up to ' + str(curve['points'][-1]['concurrency']) if curve['crossover'] is None else 'c = ' + str(curve['crossover'])}"
                          for label, curve in predictions)
    same = all(r["same_text"] for r in run["rows"])
    texts = ("Greedy texts identical to the baseline's at every concurrency." if same else
             "Some greedy texts differ from the baseline's (see the table's same-text column).")
    return (f'{STYLE}<div class="load-summary" id="load-crossover"><b>{escape(crossover_text(run))}</b><br>'
            f'Speedup by concurrency (median of timed pairs, 95% interval): {escape(speedups)}.<br>'
            + (f"Predicted crossover: {escape(predicted)}.<br>" if predicted else "")
            + f"{escape(texts)}</div>")


def source_html(measurement: dict, live: bool) -> str:
    """Where the figures come from: a live run on the sidebar's servers, or the shipped measurement with its machine,
    commands, date and notebook entry."""
    runs = measurement.get("runs") or []
    servers = runs[0]["speculative"] if runs else {}
    what = (f"{escape(str(measurement.get('target', '?')))} in {escape(str(measurement.get('dtype', '?')))}, vLLM "
            f"{escape(str(measurement.get('vllm', '?')))}")
    commands = "".join(f"<br><code>{escape(c)}</code>" for c in measurement.get("commands", []))
    if live:
        return (f'<div class="load-source" id="load-source"><b>Measured live</b> on {escape(str(servers.get("url")))} '
                f"against {escape(str(runs[0]['baseline'].get('url')) if runs else '?')}, "
                f"{escape(str(measurement.get('date')))}; {what}; machine: {escape(str(measurement.get('machine')))}. "
                f"Equivalent command:{commands}</div>")
    return (f'<div class="load-source" id="load-source"><b>Shipped measurement</b> (no vLLM server is configured): '
            f"machine <b>{escape(str(measurement.get('machine')))}</b>, measured {escape(str(measurement.get('date')))};"
            f" {what}; notebook entry {escape(str(measurement.get('notebook')))}. Commands:{commands}</div>")


# --- the batch's tokens by fate -----------------------------------------------------------------------------------

def sample_concurrencies(run: dict) -> list[int]:
    return sorted({s["concurrency"] for s in run.get("samples", [])})


def fates_html(run: dict, concurrency: Optional[int]) -> str:
    """The sampled requests of one concurrency (the last speculative loop's first few), each coloured by fate with
    the app's token classes, the legend once."""
    samples = [s for s in run.get("samples", []) if s["concurrency"] == concurrency]
    if not samples:
        return '<div class="tok-note">No sampled requests at this concurrency.</div>'
    parts = [render_legend(FATES_SHOWN)]
    for s in samples:
        events = sample_events(s)
        parts.append(f'<div class="load-request"><b>Request on prompt {s["prompt"] + 1}</b>, one of {concurrency} '
                     f"at once: {len(events)} engine steps for {len(s['token_ids'])} tokens"
                     f"{render_tokens(events)}</div>")
    return STYLE + "".join(parts)


# --- the rows -----------------------------------------------------------------------------------------------------

def _number(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def table(run: dict) -> pd.DataFrame:
    speedups = {s["concurrency"]: s for s in run["speedups"]}
    rows = sorted(run["rows"], key=lambda r: (r["concurrency"], r["engine"] != "speculative"))
    return pd.DataFrame([[r["concurrency"], r["engine"], _number(r["output_tokens_per_s"]), _number(r["tpot_ms_p50"]),
                          _number(r["tpot_ms_p95"]), _number(r["ttft_ms_p50"]), r["requests"],
                          _number(r["acceptance_rate"], 2), _number(r["mean_acceptance_length"], 2),
                          f"{r['same_text_requests']}/{r['requests']}",
                          _interval(speedups[r["concurrency"]]) if r["engine"] == "speculative" else ""]
                         for r in rows], columns=TABLE_COLUMNS)


def export_files(measurement: dict, folder: Optional[str] = None, stem: str = "specdec-load") -> list[str]:
    """<stem>.csv (every run's rows with its speedup: load_report.csv_text) and <stem>.json (the record as shown)."""
    out = Path(folder or tempfile.mkdtemp(prefix="specdec-"))
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    csv_path.write_text(csv_text(measurement.get("runs", [])))
    json_path.write_text(json.dumps(measurement, indent=1, ensure_ascii=False))
    return [str(csv_path), str(json_path)]

