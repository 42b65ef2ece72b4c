"""The Sweep's memory view: measured speedup against extra memory (MemoryReport's terms), one point per
drafter, K schedule, K and temperature, with the Pareto front marked; and the memory cells of the sweep table."""
from __future__ import annotations

from specdec.engine.events import PEAK_CPU
from specdec.measure.sweep import group_order, pareto_front
from specdec.models.memory import format_bytes
from specdec.ui.views.plots import PALETTE, style_figure

import plotly.graph_objects as go

LOG_X_SPREAD = 30  # extra memory spanning more than this factor is drawn on a log axis


def peak_text(row) -> str:
    """The measured peak of a point's run over its start, "(coarse)" where it is a CPU RSS figure."""
    if row.peak_source is None:
        return "–"
    return format_bytes(row.peak_delta_bytes) + (" (coarse)" if row.peak_source == PEAK_CPU else "")


def _hover(row) -> str:
    interval = "" if row.speedup_low is None else f" (95% interval {row.speedup_low:.2f}–{row.speedup_high:.2f})"
    return (f"{row.draft}, {row.schedule}, K={row.k}, T={row.temperature:g}<br>"
            f"speedup {row.speedup:.2f}×{interval}<br>"
            f"extra {format_bytes(row.extra_bytes)} = draft weights {format_bytes(row.draft_param_bytes)} + draft KV "
            f"cache {format_bytes(row.draft_kv_bytes)} + verification slots {format_bytes(row.verify_kv_bytes)}<br>"
            f"run peak Δ {peak_text(row)}, target-only run's {format_bytes(row.baseline_peak_delta_bytes)}")


def _plotted(rows) -> list:
    return [r for r in rows if r.speedup is not None and r.extra_bytes is not None]


def pareto_figure(rows) -> go.Figure:
    """Speedup (with its 95% interval) vs extra memory in MiB; each draft (and K schedule, when several) a
    colour, each point labelled K (and T when the sweep has several); the Pareto front of each temperature
    drawn as a line."""
    fig, points = go.Figure(), _plotted(rows)
    many_t, many_s = len({r.temperature for r in points}) > 1, len({r.schedule for r in points}) > 1
    series = sorted({(r.draft, r.schedule) for r in points}, key=lambda s: group_order((*s, 0.0)))
    for i, (draft, schedule) in enumerate(series):
        members = sorted((r for r in points if (r.draft, r.schedule) == (draft, schedule)),
                         key=lambda r: (r.temperature, r.k))
        fig.add_scatter(
            x=[r.extra_bytes / 2**20 for r in members], y=[r.speedup for r in members], mode="markers+text",
            name=f"{draft}, {schedule}" if many_s else draft,
            text=[f"K={r.k}" + (f" T={r.temperature:g}" if many_t else "") for r in members],
            textposition="top center", marker=dict(size=10, color=PALETTE[i % len(PALETTE)]),
            hovertext=[_hover(r) for r in members], hoverinfo="text",
            error_y=dict(type="data", symmetric=False, color="#777", thickness=1,
                         array=[(r.speedup_high or r.speedup) - r.speedup for r in members],
                         arrayminus=[r.speedup - (r.speedup_low or r.speedup) for r in members]))
    front = pareto_front(points)
    for t in sorted({r.temperature for r in front}):
        line = [r for r in front if r.temperature == t]
        fig.add_scatter(x=[r.extra_bytes / 2**20 for r in line], y=[r.speedup for r in line], mode="lines+markers",
                        name="Pareto front" + (f" T={t:g}" if many_t else ""), line=dict(color="#000", dash="dash",
                        shape="hv"), marker=dict(symbol="circle-open", size=16, color="#000"), hoverinfo="skip")
    fig.add_hline(y=1.0, line=dict(color="#777", dash="dot"))
    extras = [r.extra_bytes for r in points]
    if extras and min(extras) > 0 and max(extras) > LOG_X_SPREAD * min(extras):
        fig.update_xaxes(type="log")
    return style_figure(fig, "Speedup vs extra memory (draft weights + draft KV cache + verification slots)",
                        "extra memory (MiB)", "speedup (×)", height=420)
