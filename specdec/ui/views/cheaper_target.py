"""The "Why this speedup?" tab's cheaper-target lesson: bytes a token for each weight format (float32, float16, Q8_0,
Q4_1), and how the best K and the speedup move when the target's step gets cheaper while drafting costs what it did.
Plain functions over the cost model's Prediction, this machine's tuning record (runners/tuning.TunedPath: the steps and
verifications `tune` timed on each path) and the tab's own measurement (cost_prediction.Measured); the figures come
from measure/weight_formats.py (cheaper_target), the curves from the speedup formula E / (K·c + v(K))."""
from __future__ import annotations

import statistics
from html import escape
from typing import Optional

from specdec.measure import cost_model as cm
from specdec.measure import weight_formats as wf
from specdec.ui.cost_prediction import Measured
from specdec.ui.views.plots import PALETTE, style_figure
from specdec.ui.views.sweep import integer_k_axis

import pandas as pd
import plotly.graph_objects as go

FORMAT_COLUMNS = ["weights", "MB read a token", "target step (ms)", "step from", "c", "v at best K", "best K",
                  "speedup at best K", "tokens per forward", "measured here"]


def draft_token_s(pred: cm.Prediction, measured: Optional[Measured]) -> tuple[float, str]:
    """Seconds of drafting per drafted token and where it comes from: this machine's measurement (c × its target
    step, median over the measured K values) where there is one, else the cost model's prediction at the tab's K.
    The same for every format: a drafter reads its own weights, whatever the target's format."""
    if measured is not None and measured.step_s:
        costs = [row.c * measured.step_s for row in measured.rows if row.c is not None]
        if costs:
            return statistics.median(costs), "measured here"
    c, _ = pred.at(pred.k)
    return c * pred.decode.time_s, "predicted"


def lesson(pred: cm.Prediction, alpha: float, measured: Optional[Measured], tuned=None) -> wf.CheaperTarget:
    """The lesson's figures for the tab's pair: each format's step measured where the tuning record timed its path
    (and its own v(K) with it), else modelled from the prediction's bandwidth and per-step overhead; v(K) of the
    other formats is the prediction's."""
    predicted_v = dict(zip(pred.ks, pred.v))
    steps = wf.steps_from_tuning(tuned) if tuned is not None else {}
    own_v = wf.v_from_tuning(tuned) if tuned is not None else {}
    return wf.cheaper_target(pred.target, alpha, draft_token_s(pred, measured)[0], pred.device.bandwidth,
                             pred.decode.overhead_s, measured_step_s=steps, ks=pred.ks,
                             v_of_k=lambda k: predicted_v.get(k, 1.0), measured_v=own_v)


def measured_speedups(measured: Optional[Measured]) -> tuple[Optional[str], list]:
    """(format key, [(K, speedup, low, high)]) of the tab's measurement, on the format its weights were; (None, [])
    without one, or on weights the lesson has no format for."""
    if measured is None:
        return None, []
    key = wf.format_key(measured.weights)
    points = [(r.k, r.speedup, r.speedup_low, r.speedup_high) for r in measured.rows if r.speedup is not None]
    return (key, points) if key else (None, [])


def formats_table(result: wf.CheaperTarget, measured: Optional[Measured] = None) -> pd.DataFrame:
    key, points = measured_speedups(measured)
    here = ", ".join(f"K={k}: {s:.2f}×" for k, s, _, _ in points)
    records = [[p.format.label, p.bytes_per_token / 1e6, p.step_s * 1e3,
                "measured here (tune)" if p.step_measured else "modelled (bytes / bandwidth + overhead)", p.c,
                p.v_at_best, p.best_k, p.best_speedup, p.tokens_per_forward,
                here if p.format.key == key else "–"] for p in result.points]
    return pd.DataFrame(records, columns=FORMAT_COLUMNS).round(3)


def formats_figure(result: wf.CheaperTarget, measured: Optional[Measured] = None) -> go.Figure:
    """Speedup over K for each format (solid: its step measured here; dotted: modelled), its best K starred, and the
    tab's measured speedups with their intervals on the format they ran on."""
    fig = go.Figure()
    for i, p in enumerate(result.points):
        color = PALETTE[i % len(PALETTE)]
        source = "measured step" if p.step_measured else "modelled step"
        fig.add_scatter(x=list(p.ks), y=list(p.speedups), mode="lines", name=f"{p.format.label} ({source}, c = {p.c:.3f})",
                        line=dict(color=color, width=3 if p.step_measured else 2,
                                  dash="solid" if p.step_measured else "dot"), legendgroup=p.format.key)
        fig.add_scatter(x=[p.best_k], y=[p.best_speedup], mode="markers", showlegend=False, legendgroup=p.format.key,
                        marker=dict(color=color, size=14, symbol="star"),
                        hovertext=[f"{p.format.label}: best K = {p.best_k}, {p.best_speedup:.2f}×"], hoverinfo="text")
    key, points = measured_speedups(measured)
    if points:
        fig.add_scatter(x=[k for k, *_ in points], y=[s for _, s, _, _ in points], mode="markers",
                        name=f"measured here on {measured.weights}", marker=dict(color="#333", size=10, symbol="x"),
                        error_y=dict(type="data", symmetric=False, color="#555", thickness=1,
                                     array=[(hi - s) if hi is not None else 0 for _, s, _, hi in points],
                                     arrayminus=[(s - lo) if lo is not None else 0 for _, s, lo, _ in points]))
    fig.add_hline(y=1.0, line=dict(color="#777", dash="dot"))
    integer_k_axis(fig, result.points[0].ks if result.points else [1])
    fig = style_figure(fig, f"When the target gets cheaper: speedup vs K by weight format (α = {result.alpha:.2f})",
                       "K", "speedup (×)", height=480)
    fig.update_layout(legend=dict(orientation="h", y=-0.22, yanchor="top"), margin=dict(b=140))
    return fig


def formats_note(result: wf.CheaperTarget, source: str) -> str:
    """The lesson in words, from the heaviest format to the lightest."""
    if not result.points:
        return ""
    heavy, light = max(result.points, key=lambda p: p.bytes_per_token), min(result.points, key=lambda p: p.bytes_per_token)
    reads = ", ".join(f"{escape(p.format.label)} {p.bytes_per_token / 1e6:.0f} MB" for p in result.points)
    measured = [escape(p.format.label) for p in result.points if p.step_measured]
    steps = (f"Steps measured here by <code>tune</code>: {', '.join(measured)}; the others modelled as bytes / "
             f"{result.bandwidth / 1e9:.0f} GB/s + {result.overhead_s * 1e3:.2f} ms." if measured else
             f"Every step modelled as bytes / {result.bandwidth / 1e9:.0f} GB/s + {result.overhead_s * 1e3:.2f} ms "
             "(run <code>python -m specdec tune</code> to measure this machine's paths).")
    return (f"<p class='explain-note'>A decoding step reads every weight once: {reads} a token. Drafting costs "
            f"{result.draft_token_s * 1e3:.2f} ms a drafted token ({escape(source)}) whatever the target's format, "
            f"so as the target gets cheaper c grows: from {heavy.c:.3f} ({escape(heavy.format.label)}, a "
            f"{heavy.step_s * 1e3:.1f} ms step) to {light.c:.3f} ({escape(light.format.label)}, {light.step_s * 1e3:.1f} "
            f"ms). {movement(heavy, light, result.alpha)} "
            f"{steps}</p>")


def movement(heavy: wf.FormatPoint, light: wf.FormatPoint, alpha: float) -> str:
    """What the cheaper target did to the best K and the speedup, in words that match the figures."""
    k = (f"The best K stays at {heavy.best_k}" if heavy.best_k == light.best_k else
         f"The best K moves from {heavy.best_k} to {light.best_k}")
    speed = f"the speedup goes from {heavy.best_speedup:.2f}× to {light.best_speedup:.2f}× at α = {alpha:.2f}"
    if light.best_speedup < heavy.best_speedup * 0.99:
        return f"{k} and {speed}: the cheaper target is faster, and speculation buys less on it."
    if light.best_speedup > heavy.best_speedup * 1.01:
        return f"{k} and {speed}: here the cheaper path verifies K+1 tokens for less (its own v(K)), which outweighs c."
    if heavy.step_s < 1.2 * light.step_s:
        return f"{k} and {speed}: here a step is mostly its fixed overhead, so the weights' bytes barely move c."
    return f"{k} and {speed}: no difference worth a figure at this α and drafting cost."


def render_formats(pred: cm.Prediction, alpha: float, measured: Optional[Measured], tuned=None) -> dict:
    """The lesson's three outputs: its note, its figure and its table."""
    result = lesson(pred, alpha, measured, tuned)
    return {"formats_note": formats_note(result, draft_token_s(pred, measured)[1]),
            "formats_figure": formats_figure(result, measured), "formats_table": formats_table(result, measured)}
