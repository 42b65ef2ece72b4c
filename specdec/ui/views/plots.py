"""Plotly figures for one run: pure functions from StepEvents / MemoryReport to go.Figure. A token's fate has one
colour and one pattern in every plot, the text's (fates.py); a title is short enough for half a laptop's width, its
details in the subtitle below it."""
from __future__ import annotations

from specdec.engine.theory import live_metrics, position_counts, step_seconds
from specdec.models.memory import format_bytes
from specdec.ui.views.fates import FATE_COLORS, FATES, ROLE_COLORS

import plotly.graph_objects as go
import plotly.io as pio

COLORS = {**FATE_COLORS, **ROLE_COLORS}  # a fate's colour, or a role's (a decoder, a distribution, the theory)
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]  # one per series
TITLE_PX, SUBTITLE_PX = 14, 12
# The plots' one background, as plotly's default: a new figure takes its default template without validating it, where
# update_layout(template=...) validates the whole template again for every figure, most of a finished run's figures'
# time (the docs' notebook, the fast tier on the Zen 1, has the figures).
pio.templates.default = "plotly_white"


def style_figure(fig: go.Figure, title: str, x: str, y: str, height: int = 300, subtitle: str = "") -> go.Figure:
    """The plots' one look: the title (and its subtitle, under it), axis titles, the legend under the plot."""
    head = dict(text=title, font=dict(size=TITLE_PX))
    if subtitle:
        head["subtitle"] = dict(text=subtitle, font=dict(size=SUBTITLE_PX))
    fig.update_layout(title=head, height=height,
                      margin=dict(l=50, r=15, t=62 if subtitle else 45, b=45), legend=dict(orientation="h", y=-0.25),
                      xaxis_title=x, yaxis_title=y)
    return fig


def acceptance_by_position_figure(events) -> go.Figure:
    rows = position_counts(events)
    pos = [r[0] + 1 for r in rows]
    fig = go.Figure()
    fig.add_bar(x=pos, y=[r[3] / r[1] if r[1] else None for r in rows], name="acceptance rate (accepted / drafted)",
                marker_color=COLORS["accepted"], text=[f"{r[3]}/{r[1]}" for r in rows], textposition="auto")
    fig.add_scatter(x=pos, y=[r[3] / r[2] if r[2] else None for r in rows], mode="markers+lines",
                    name="α (accepted / evaluated)", marker=dict(symbol="diamond", size=9),
                    line=dict(dash="dot", color=COLORS["theory"]),
                    customdata=[[r[3], r[2]] for r in rows],
                    hovertemplate="α = %{y:.2f} (%{customdata[0]} of %{customdata[1]} evaluated)<extra></extra>")
    fig.update_yaxes(range=[0, 1.05])
    fig.update_xaxes(dtick=1)
    return style_figure(fig, "Acceptance by draft position", "draft position", "fraction",
                        subtitle="bars: accepted / drafted (counts on them) · ◆ α: accepted / evaluated")


def _final_fate(event) -> str:
    """The fate of a step's own token: resampled, bonus, or target (plain decoding, no drafts)."""
    kind = getattr(event.final, "kind", None)
    return kind if kind in ("resampled", "bonus", "target") else "resampled"


FINAL_NAMES = {"resampled": "target's token: resampled", "bonus": "target's token: bonus",
               "target": "target's token: plain decoding"}


def accepted_length_figure(events) -> go.Figure:
    """Accepted draft tokens per step, stacked with the step's own token in its fate's colour and pattern (one trace
    per fate, so each legend swatch is its bars'), and the step's K."""
    steps = [e.index for e in events]
    fig = go.Figure()
    fig.add_bar(x=steps, y=[e.num_accepted for e in events], name="accepted drafts",
                marker_color=COLORS["accepted"])
    for fate, name in FINAL_NAMES.items():
        own = [e for e in events if _final_fate(e) == fate]
        if own or fate == "resampled":
            fig.add_bar(x=[e.index for e in own], name=name, marker_color=COLORS[fate],
                        y=[len(e.emitted_ids) - min(e.num_accepted, len(e.emitted_ids)) for e in own],
                        marker_pattern=dict(shape=FATES[fate].pattern, fgcolor="#ffffff", solidity=0.35))
    fig.add_scatter(x=steps, y=[e.k for e in events], mode="lines", name="K",
                    line=dict(shape="hv", dash="dash", color=COLORS["k"]))
    fig.update_layout(barmode="stack")
    return style_figure(fig, "Accepted length per step", "step", "tokens",
                        subtitle="accepted drafts + the target's own token · dashed: K")


def _cumulative(events, total_s: float | None = None) -> tuple[list[float], list[int]]:
    """Cumulative (time, tokens); with the run's total engine time, the prefill shows as a flat start."""
    t = max(0.0, total_s - sum(step_seconds(e) for e in events)) if total_s else 0.0
    times, tokens, n = [0.0, t], [0, 0], 0
    for e in events:
        t += step_seconds(e)
        n += len(e.emitted_ids)
        times.append(t)
        tokens.append(n)
    return times, tokens


def throughput_figure(spec, baseline=None) -> go.Figure:
    """Cumulative tokens over engine time (slope = tokens/s). spec, baseline: RunResults or event lists;
    with a baseline, both are one timed pair of the speedup measurement."""
    fig = go.Figure()
    timed = " (timed)" if baseline else ""
    for name, run, color in ((f"speculative{timed}", spec, COLORS["spec"]),
                             ("target-only (timed)", baseline, COLORS["target"])):
        if not run:
            continue
        events, total = (run, None) if isinstance(run, list) else (run.events, run.metrics.wall_time_s)
        tps = (live_metrics(events) if total is None else run.metrics).tokens_per_s
        times, tokens = _cumulative(events, total)
        fig.add_scatter(x=times, y=tokens, mode="lines", name=f"{name}: {tps or 0:.1f} tok/s",
                        line=dict(color=color, width=3, shape="hv"))
    title = "Tokens over time: one timed pair" if baseline else "Tokens over time: the streamed run"
    return style_figure(fig, title, "engine time (s)", "tokens")


# The target's parts in its grey, the drafter's in the draft's sky blue (lighter: the KV caches), the measured in black.
MEMORY_COLORS = {"target": ROLE_COLORS["target"], "target KV": "#BBBBBB", "draft": ROLE_COLORS["draft"],
                 "draft KV": "#A9DAF3", "verification slots": ROLE_COLORS["theory"], "measured": "#000000"}


def _mib(n) -> float | None:
    return None if n is None else n / 2**20


def _peak_name(memory) -> str:
    return "run peak Δ (RSS, coarse)" if memory.peak_is_coarse else "run peak Δ"


def _held_parts(memory) -> list[tuple[str, int, str]]:
    """(name, bytes, colour key) of what the run holds, counted then measured."""
    parts = [(f"target weights ({memory.target_weights})" if memory.target_weights else "target weights",
              memory.target_param_bytes, "target"),
             ("draft weights", memory.draft_param_bytes, "draft"),
             ("target KV cache", memory.target_kv_bytes, "target KV"),
             ("draft KV cache", memory.draft_kv_bytes, "draft KV")]
    if memory.peak_device_bytes is not None:
        parts.append(("peak device", memory.peak_device_bytes, "measured"))
    if memory.peak_delta_bytes is not None:
        parts.append((_peak_name(memory), memory.peak_delta_bytes, "measured"))
    if memory.process_rss_bytes is not None:
        parts.append(("process RSS", memory.process_rss_bytes, "measured"))
    return parts


# Two plots one above the other (what plotly's make_subplots(rows=2, row_heights=[0.72, 0.28], vertical_spacing=0.2)
# lays out), written out: the memory figure is made for every finished run, and make_subplots alone took ~40% of it.
MEMORY_AXES = {"xaxis": dict(anchor="y", domain=[0.0, 1.0]), "yaxis": dict(anchor="x", domain=[0.424, 1.0]),
               "xaxis2": dict(anchor="y2", domain=[0.0, 1.0]), "yaxis2": dict(anchor="x2", domain=[0.0, 0.224])}


def memory_figure(memory) -> go.Figure:
    """Above, what the run holds (target weights and KV cache, the drafter's weights and KV cache, the measured
    peaks; log scale, as process RSS dwarfs the rest); below, the extra memory of speculation stacked from its parts
    (MemoryReport's terms). Bars lie horizontal, their names one line each on the left: no width makes them collide."""
    axes = {name: dict(axis) for name, axis in MEMORY_AXES.items()}
    bars = []
    if memory is not None:
        parts = _held_parts(memory)
        bars.append(go.Bar(y=[n for n, _, _ in parts], x=[_mib(v) for _, v, _ in parts], orientation="h",
                           showlegend=False, name="held", text=[format_bytes(v) for _, v, _ in parts],
                           textposition="outside", cliponaxis=False,
                           marker_color=[MEMORY_COLORS[c] for _, _, c in parts], xaxis="x", yaxis="y"))
        axes["yaxis"].update(autorange="reversed", automargin=True)
        axes["xaxis"].update(type="log", dtick=1, title_text="MiB (log)")  # a tick per power of ten
        for name, value, color in (("draft weights", memory.draft_param_bytes, "draft"),
                                   ("draft KV cache", memory.draft_kv_bytes, "draft KV"),
                                   ("verification slots", memory.verify_kv_bytes or 0, "verification slots")):
            bars.append(go.Bar(y=["extra memory"], x=[_mib(value)], orientation="h", name=f"extra: {name}",
                               marker_color=MEMORY_COLORS[color],
                               hovertemplate=f"{name}: {format_bytes(value)}<extra></extra>", xaxis="x2", yaxis="y2"))
        axes["yaxis2"].update(automargin=True)
        axes["xaxis2"].update(title_text="MiB")
    fig = go.Figure(data=bars, layout=dict(axes, barmode="stack") if memory is not None else axes)
    title, subtitle = _memory_title(memory)
    fig = style_figure(fig, title, "", "", height=420, subtitle=subtitle)
    return fig.update_layout(margin=dict(r=60, b=60), legend=dict(y=-0.22))


def _memory_title(memory) -> tuple[str, str]:
    if memory is None:
        return "Memory (n/a)", ""
    share = f"{memory.extra_bytes / memory.target_param_bytes:.1%} of the target's weights · " \
        if memory.target_param_bytes else ""
    return (f"Memory ({memory.device}): extra {format_bytes(memory.extra_bytes)}",
            f"{share}above: what the run holds (log scale)")


RUN_PLOTS = ("plot_acceptance", "plot_lengths", "plot_throughput", "plot_memory")  # run_figures' keys


def run_figures(events, spec=None, baseline=None, memory=None) -> dict[str, go.Figure]:
    """The four run plots (RUN_PLOTS); spec / baseline are RunResults when known (else the events are used)."""
    return dict(zip(RUN_PLOTS, (acceptance_by_position_figure(events), accepted_length_figure(events),
                                throughput_figure(spec or events, baseline), memory_figure(memory))))
