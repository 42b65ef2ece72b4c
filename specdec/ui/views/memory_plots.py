"""The Sweep's memory view: measured speedup against extra memory (MemoryReport's terms), one point per
drafter, K schedule, K and temperature, with the Pareto front marked; and the memory cells of the sweep table."""
from __future__ import annotations

import math

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


# Where a point's label may go, in order of preference: (Plotly's textposition, the label box's offset from the point
# in label widths and heights, its centre's).
LABEL_SPOTS = (("top center", 0.0, -1.0), ("bottom center", 0.0, 1.0), ("middle right", 0.5, 0.0),
               ("middle left", -0.5, 0.0), ("top right", 0.5, -1.0), ("bottom left", -0.5, 1.0))
PLOT_PX = (560, 240)  # the plot area this lays labels out for: narrower than the Sweep's at 1280 px, so they fit there
CHAR_PX, LABEL_PX, MARKER_PX = 7.0, 16.0, 7.0  # a label's character width and height, a marker's radius (12 px text)
T_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "cross", "star")  # a temperature's marker, when several


def _scaled(values: list[float], log: bool) -> list[float]:
    """Positions in 0..1 along an axis (Plotly pads its range about 6% each side)."""
    v = [math.log10(x) if log else x for x in values]
    low, high = min(v), max(v)
    span = (high - low) or 1.0
    return [0.06 + 0.88 * (x - low) / span for x in v]


def place_labels(xs: list[float], ys: list[float], texts: list[str], log_x: bool = False) -> list[tuple[str, str]]:
    """(text, textposition) per point: each label at the first spot (LABEL_SPOTS) where it overlaps no label placed
    before it and no other point's marker, in a PLOT_PX plot area; "" where none is free (its hover still says it)."""
    if not xs:
        return []
    width, height = PLOT_PX
    px = [x * width for x in _scaled(xs, log_x)]
    py = [(1 - y) * height for y in _scaled(ys, False)]
    markers = [(x - MARKER_PX, y - MARKER_PX, x + MARKER_PX, y + MARKER_PX) for x, y in zip(px, py)]
    taken, placed = [], []
    for i, text in enumerate(texts):
        w, h = len(text) * CHAR_PX + 4, LABEL_PX
        for spot, dx, dy in LABEL_SPOTS:
            cx = px[i] + dx * (w + 2 * MARKER_PX)
            cy = py[i] + dy * (h / 2 + MARKER_PX)
            box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
            others = [m for j, m in enumerate(markers) if j != i]
            if not any(_overlap(box, b) for b in taken + others):
                taken.append(box)
                placed.append((text, spot))
                break
        else:
            placed.append(("", "top center"))
    return placed


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def pareto_figure(rows) -> go.Figure:
    """Speedup (with its 95% interval) vs extra memory in MiB; each draft (and K schedule, when several) a
    colour, each temperature a marker shape (when several), each point labelled K where its label collides with no
    other (place_labels); the Pareto front of each temperature drawn as a line."""
    fig, points = go.Figure(), _plotted(rows)
    temperatures = sorted({r.temperature for r in points})
    many_t, many_s = len(temperatures) > 1, len({r.schedule for r in points}) > 1
    symbol = {t: T_SYMBOLS[i % len(T_SYMBOLS)] if many_t else "circle" for i, t in enumerate(temperatures)}
    extras = [r.extra_bytes for r in points]
    log_x = bool(extras) and min(extras) > 0 and max(extras) > LOG_X_SPREAD * min(extras)
    series = sorted({(r.draft, r.schedule) for r in points}, key=lambda s: group_order((*s, 0.0)))
    members = {s: sorted((r for r in points if (r.draft, r.schedule) == s), key=lambda r: (r.temperature, r.k))
               for s in series}
    ordered = [r for s in series for r in members[s]]
    labels = dict(zip(map(id, ordered), place_labels([r.extra_bytes for r in ordered], [r.speedup for r in ordered],
                                                      [f"K={r.k}" for r in ordered], log_x)))
    for i, (draft, schedule) in enumerate(series):
        mine = members[(draft, schedule)]
        fig.add_scatter(
            x=[r.extra_bytes / 2**20 for r in mine], y=[r.speedup for r in mine], mode="markers+text",
            name=f"{draft}, {schedule}" if many_s else draft,
            text=[labels[id(r)][0] for r in mine], textposition=[labels[id(r)][1] for r in mine],
            marker=dict(size=10, color=PALETTE[i % len(PALETTE)], symbol=[symbol[r.temperature] for r in mine]),
            hovertext=[_hover(r) for r in mine], hoverinfo="text",
            error_y=dict(type="data", symmetric=False, color="#777", thickness=1,
                         array=[(r.speedup_high or r.speedup) - r.speedup for r in mine],
                         arrayminus=[r.speedup - (r.speedup_low or r.speedup) for r in mine]))
    if many_t:  # the shapes' key
        for t in temperatures:
            fig.add_scatter(x=[None], y=[None], mode="markers", name=f"T={t:g}",
                            marker=dict(size=10, color="#777", symbol=symbol[t]))
    front = pareto_front(points)
    for t in sorted({r.temperature for r in front}):
        line = [r for r in front if r.temperature == t]
        fig.add_scatter(x=[r.extra_bytes / 2**20 for r in line], y=[r.speedup for r in line], mode="lines+markers",
                        name="Pareto front" + (f" T={t:g}" if many_t else ""), line=dict(color="#000", dash="dash",
                        shape="hv"), marker=dict(symbol="circle-open", size=16, color="#000"), hoverinfo="skip")
    fig.add_hline(y=1.0, line=dict(color="#777", dash="dot"))
    if log_x:
        fig.update_xaxes(type="log")
    return style_figure(fig, "Speedup vs extra memory", "extra memory (MiB)", "speedup (×)", height=420,
                        subtitle="extra = draft weights + draft KV cache + verification slots · label: K")
