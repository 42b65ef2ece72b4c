"""The "Why this speedup?" tab's views: the prediction's summary (each forward's bytes, FLOPs and roofline bound), the
roofline and speedup figures and the predicted-vs-measured table; plain functions of the cost model's Prediction
(specdec/measure/cost_model.py) and this machine's measurement (cost_prediction.Measured)."""
from __future__ import annotations

import math
from html import escape
from typing import Optional

from specdec.measure import cost_model as cm
from specdec.measure.sweep import theory_applies
from specdec.models.memory import format_bytes
from specdec.ui.cost_prediction import Measured
from specdec.ui.views.plots import PALETTE, style_figure
from specdec.ui.views.render import render_key_result
from specdec.ui.views.sweep import integer_k_axis

import pandas as pd
import plotly.graph_objects as go

COLUMNS = ["K", "c predicted", "c measured", "v(K) predicted", "v(K) measured", "speedup predicted",
           "textbook predicted", "speedup measured", "95% interval"]


def render(pred: cm.Prediction, alpha: float, measured: Optional[Measured]) -> dict:
    comparisons = cm.compare(pred, measured.rows) if measured else []
    return {"summary": summary_html(pred, alpha, measured, comparisons), "roofline": roofline_figure(pred),
            "speedup": speedup_figure(pred, alpha, comparisons), "table": comparison_table(pred, alpha, comparisons),
            "status": "", "error": ""}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _flops(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if x >= scale:
            return f"{x / scale:.1f} {unit}"
    return f"{x:.0f} "


def _num(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def _error(x) -> str:
    return "" if x is None else f" ({x:+.0%})"


def named_costs(pred: cm.Prediction) -> list[tuple[str, str, Optional[cm.Cost]]]:
    """(what, which model, cost) for every forward the tab shows."""
    k1 = pred.k + 1
    call = f"one call for K = {pred.k} tokens" if pred.draft.one_call else "decode, 1 token"
    return [("decode, 1 token", "target", pred.decode), (f"verify, K+1 = {k1} tokens", "target", pred.verify),
            (f"prefill, {pred.context} tokens", "target", pred.prefill),
            (call, "draft", pred.draft_decode), (f"{k1} tokens", "draft", pred.draft_verify),
            (f"prefill, {pred.context} tokens", "draft", pred.draft_prefill)]


def summary_html(pred: cm.Prediction, alpha: float, measured: Optional[Measured], comparisons) -> str:
    dev = pred.device
    head = (f"<b>{escape(dev.label)}</b>, {pred.dtype}: {dev.bandwidth / 1e9:.0f} GB/s, "
            f"{dev.peak(pred.dtype) / 1e12:.3g} TFLOP/s, ridge {dev.peak(pred.dtype) / dev.bandwidth:.3g} FLOP/byte, "
            f"overhead {_ms(dev.forward_overhead_s)} per forward + {_ms(dev.layer_overhead_s)} per layer "
            f"({escape(dev.source)}).{row_curve_text(dev, pred.dtype)} Target {escape(pred.target.name)}: "
            f"{pred.target.params / 1e6:.1f}M matmul "
            f"weights, {pred.target.layers} layers; draft {escape(pred.draft.name)} ({escape(pred.draft.family)})"
            + (f": {pred.draft.network.params / 1e6:.1f}M, {pred.draft.network.layers} layers."
               if pred.draft.network else ": no network, it costs the model nothing (c = 0).")
            + f" Context: {pred.context} tokens.")
    rows = "".join(
        f"<tr><td>{who}: {what}</td><td>{format_bytes(cost.bytes)}</td><td>{_flops(cost.flops)}FLOP</td>"
        f"<td>{cost.intensity:.3g}</td><td>{_ms(cost.memory_s)}</td><td>{_ms(cost.compute_s)}</td>"
        f"<td>{_ms(cost.overhead_s)}</td><td><b>{_ms(cost.time_s)}</b></td><td>{cost.bound}-bound, overhead "
        f"{cost.overhead_share:.0%}</td></tr>"
        for what, who, cost in named_costs(pred) if cost is not None)
    table = ("<table class='fit-table'><tr><th>forward</th><th>bytes</th><th>FLOPs</th><th>FLOP/byte</th>"
             "<th>memory</th><th>compute</th><th>overhead</th><th>predicted</th><th>roofline bound</th></tr>"
             f"{rows}</table>")
    return f'<div class="theory-fit">{head}{table}{key_figures(pred, alpha, measured, comparisons)}</div>'


def row_curve_text(dev, dtype: str) -> str:
    """The measured row curve in words (weight bytes streamed per second by rows), or nothing without one."""
    curve = dev.row_curves.get(dtype)
    if not curve:
        return ""
    rates = ", ".join(f"M = {rows}: {1 / s / 1e9:.1f} GB/s" for rows, s in curve)
    return (f" Linear layers measured over M rows ({rates} of weights): the weight products are timed by this "
            "curve, not the roofline, so 'predicted' differs from max(memory, compute) + overhead.")


def key_figures(pred: cm.Prediction, alpha: float, measured: Optional[Measured], comparisons) -> str:
    c, v = pred.at(pred.k)
    textbook, form = (s[pred.ks.index(pred.k)] for s in pred.speedups(alpha))
    line = (f"At K={pred.k}: predicted c = {c:.3f}, v(K) = {v:.2f}; speedup at α = {alpha:.2f}: "
            f"{form:.2f}× (textbook, v = 1: {textbook:.2f}×).")
    if measured is None:
        return render_key_result(line + " Not measured on this machine for this pair yet.")
    mine = next((x for x in comparisons if x.k == pred.k), None)
    if mine is None:
        return render_key_result(line + f" K={pred.k} was not among the measured K values.")
    row = next(r for r in measured.rows if r.k == pred.k)
    share = "" if theory_applies(row) else (f" The drafter proposed only {row.proposal_share:.0%} of the K tokens a "
                                           "step allows, so the i.i.d. formula does not describe the measured speedup.")
    step = "" if measured.step_s is None else (f" A target-only step: predicted {_ms(pred.decode.time_s)}, measured "
                                               f"{_ms(measured.step_s)}.")
    return render_key_result(
        f"{line}{step} Measured on this machine: c = {_num(mine.c_measured)}{_error(mine.c_error)}, v(K) = "
        f"{_num(mine.v_measured)}{_error(mine.v_error)}, speedup {_num(mine.speedup_measured)}× at α = "
        f"{_num(mine.alpha)} (the prediction at that α: {_num(mine.speedup_predicted)}×).{share}")


def roofline_figure(pred: cm.Prediction) -> go.Figure:
    """Attainable FLOP/s = min(peak, bandwidth × intensity), with each forward on the roof at its intensity;
    hollow markers show what it attains once the overhead is counted."""
    dev, peak = pred.device, pred.device.peak(pred.dtype)
    costs = [(what, who, cost) for what, who, cost in named_costs(pred) if cost is not None]
    ridge = peak / dev.bandwidth
    lo = min([ridge / 100] + [cost.intensity / 3 for _, _, cost in costs])
    hi = max([ridge * 100] + [cost.intensity * 3 for _, _, cost in costs])
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig = go.Figure()
    fig.add_scatter(x=xs, y=[min(peak, dev.bandwidth * x) for x in xs], mode="lines", line=dict(color="#444"),
                    name=f"roof ({pred.dtype}): {dev.bandwidth / 1e9:.0f} GB/s, {peak / 1e12:.3g} TFLOP/s")
    fig.add_scatter(x=[ridge, ridge], y=[peak / 1e3, peak], mode="lines", line=dict(color="#999", dash="dot"),
                    name=f"ridge point: {ridge:.3g} FLOP/byte")
    symbols = ["circle", "diamond", "square"]
    for i, (what, who, cost) in enumerate(costs):
        color = PALETTE[0] if who == "target" else PALETTE[1]
        hover = (f"{who}: {what}<br>{cost.intensity:.3g} FLOP/byte, {cost.bound}-bound<br>predicted "
                 f"{_ms(cost.time_s)}, overhead {cost.overhead_share:.0%}")
        fig.add_scatter(x=[cost.intensity], y=[min(peak, dev.bandwidth * cost.intensity)], mode="markers",
                        name=f"{who}: {what}", hovertext=[hover], hoverinfo="text",
                        marker=dict(color=color, size=12, symbol=symbols[i % 3]))
        fig.add_scatter(x=[cost.intensity], y=[cost.attained_flops], mode="markers", showlegend=i == 0,
                        name="hollow: what it attains with the overhead", legendgroup="overhead",
                        hovertext=[hover + "<br>(with the overhead)"], hoverinfo="text",
                        marker=dict(color=color, size=10, symbol=symbols[i % 3] + "-open"))
    add_row_curve(fig, pred)
    fig.update_xaxes(type="log", range=[math.log10(lo), math.log10(hi)])
    fig.update_yaxes(type="log")
    return legend_below(style_figure(fig, f"Roofline: {dev.label}, {pred.dtype}", "arithmetic intensity (FLOP / byte)",
                                     "attainable FLOP/s", height=520))


def add_row_curve(fig: go.Figure, pred: cm.Prediction) -> None:
    """The measured linear layers (a device's row curve): an M-row product does 2·M FLOP per weight (2·M / bytes
    per weight per byte) at the measured seconds per weight byte."""
    curve = pred.device.row_curves.get(pred.dtype)
    if not curve:
        return
    size = cm.DTYPE_BYTES[pred.dtype]
    xs, ys = [2 * rows / size for rows, _ in curve], [2 * rows / size / s for rows, s in curve]
    fig.add_scatter(x=xs, y=ys, mode="lines+markers", line=dict(color=PALETTE[2], dash="dash"),
                    name="measured linear layers, M = " + ", ".join(str(rows) for rows, _ in curve) + " rows",
                    hovertext=[f"M = {rows} rows: {y / 1e9:.1f} GFLOP/s" for (rows, _), y in zip(curve, ys)],
                    hoverinfo="text", marker=dict(size=7))


def legend_below(fig: go.Figure) -> go.Figure:
    """Room under the plot for a legend of several lines (style_figure's sits just below the axis title)."""
    fig.update_layout(legend=dict(orientation="h", y=-0.22, yanchor="top"), margin=dict(b=150))
    return fig


def speedup_figure(pred: cm.Prediction, alpha: float, comparisons) -> go.Figure:
    textbook, form = pred.speedups(alpha)
    fig = go.Figure()
    fig.add_scatter(x=list(pred.ks), y=form, mode="lines+markers", line=dict(color=PALETTE[0], width=3),
                    name=f"predicted E/(K·c+v(K)), α={alpha:.2f}")
    fig.add_scatter(x=list(pred.ks), y=textbook, mode="lines", line=dict(color=PALETTE[0], dash="dash"),
                    name="predicted textbook E/(K·c+1)")
    if comparisons:
        fig.add_scatter(x=[x.k for x in comparisons], y=[x.speedup_measured for x in comparisons],
                        mode="markers", marker=dict(color=PALETTE[1], size=10), name="measured on this machine",
                        error_y=dict(type="data", symmetric=False, color="#555", thickness=1,
                                     array=[(x.speedup_high - x.speedup_measured) if x.speedup_high else 0
                                            for x in comparisons],
                                     arrayminus=[(x.speedup_measured - x.speedup_low) if x.speedup_low else 0
                                                 for x in comparisons]))
    fig.add_hline(y=1.0, line=dict(color="#777", dash="dot"))
    integer_k_axis(fig, pred.ks)
    return legend_below(style_figure(fig, f"Speedup vs K, predicted for {pred.device.label}", "K", "speedup (×)",
                                     height=520))


def comparison_table(pred: cm.Prediction, alpha: float, comparisons) -> pd.DataFrame:
    textbook, form = pred.speedups(alpha)
    by_k = {x.k: x for x in comparisons}
    records = []
    for k, c, v, t, f in zip(pred.ks, pred.c, pred.v, textbook, form):
        x = by_k.get(k)
        interval = "–" if x is None or x.speedup_low is None else f"{x.speedup_low:.2f}–{x.speedup_high:.2f}"
        records.append([k, c, x and x.c_measured, v, x and x.v_measured, f, t, x and x.speedup_measured, interval])
    return pd.DataFrame(records, columns=COLUMNS).round(3)
