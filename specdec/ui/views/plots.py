"""Plotly figures for one run: pure functions from StepEvents / MemoryReport to go.Figure."""
from __future__ import annotations

from specdec.engine.theory import live_metrics, position_counts, step_seconds
from specdec.models.memory import format_bytes

import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLORS = {"accepted": "#009E73", "rejected": "#D55E00", "resampled": "#E69F00", "bonus": "#0072B2",
          "target": "#777777", "spec": "#0072B2", "theory": "#CC79A7"}
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]  # one per series


def style_figure(fig: go.Figure, title: str, x: str, y: str, height: int = 300) -> go.Figure:
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=height, template="plotly_white",
                      margin=dict(l=50, r=15, t=45, b=45), legend=dict(orientation="h", y=-0.25),
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
    return style_figure(fig, "Acceptance by draft position (bars: accepted/drafted counts)", "draft position",
                        "fraction")


def _final_fate(event) -> str:
    """The colour key of a step's own token: resampled, bonus, or a plain target step (no drafts)."""
    kind = getattr(event.final, "kind", None)
    return kind if kind in ("resampled", "bonus", "target") else "resampled"


def accepted_length_figure(events) -> go.Figure:
    """Accepted draft tokens per step, with the step's K and the tokens it emitted."""
    steps = [e.index for e in events]
    fig = go.Figure()
    fig.add_bar(x=steps, y=[e.num_accepted for e in events], name="accepted drafts",
                marker_color=COLORS["accepted"])
    fig.add_bar(x=steps, y=[len(e.emitted_ids) - min(e.num_accepted, len(e.emitted_ids)) for e in events],
                name="target's token: resampled", marker_color=[COLORS[_final_fate(e)] for e in events],
                marker_pattern_shape=["/" if _final_fate(e) == "bonus" else "" for e in events])
    for fate in ("bonus", "target"):  # legend entries for the bars' other colours (the text's colours)
        fig.add_bar(x=[None], y=[None], name=f"target's token: {'bonus' if fate == 'bonus' else 'plain decoding'}",
                    marker_color=COLORS[fate], marker_pattern_shape="/" if fate == "bonus" else "")
    fig.add_scatter(x=steps, y=[e.k for e in events], mode="lines", name="K",
                    line=dict(shape="hv", dash="dash", color=COLORS["target"]))
    fig.update_layout(barmode="stack")
    return style_figure(fig, "Accepted length per step (+ the target's own token)", "step", "tokens")


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


MEMORY_COLORS = {"target": "#0072B2", "target KV": "#56B4E9", "draft": "#E69F00", "draft KV": "#F5C65C",
                 "verification slots": "#CC79A7", "measured": "#999999"}


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


def _two_lines(name: str) -> str:
    """A tick label broken at every space, so neighbouring labels never overlap at a laptop's width."""
    return name.replace(" (", "<br>(").replace(" ", "<br>")


def memory_figure(memory) -> go.Figure:
    """Left, what the run holds (target weights and KV cache, the drafter's weights and KV cache, the measured
    peaks; log scale, as process RSS dwarfs the rest); right, the extra memory of speculation stacked from its
    parts (MemoryReport's terms)."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.75, 0.25], horizontal_spacing=0.12)
    if memory is not None:
        parts = _held_parts(memory)
        names = [n for n, _, _ in parts]
        fig.add_bar(x=names, y=[_mib(v) for _, v, _ in parts], showlegend=False, name="held",
                    text=[format_bytes(v) for _, v, _ in parts], textposition="outside", cliponaxis=False,
                    marker_color=[MEMORY_COLORS[c] for _, _, c in parts], row=1, col=1)
        fig.update_xaxes(tickvals=names, ticktext=[_two_lines(n) for n in names], tickangle=0,
                         tickfont=dict(size=10), row=1, col=1)
        fig.update_yaxes(type="log", row=1, col=1)
        for name, value, color in (("draft weights", memory.draft_param_bytes, "draft"),
                                   ("draft KV cache", memory.draft_kv_bytes, "draft KV"),
                                   ("verification slots", memory.verify_kv_bytes or 0, "verification slots")):
            fig.add_bar(x=["extra memory"], y=[_mib(value)], name=f"extra: {name}", marker_color=MEMORY_COLORS[color],
                        hovertemplate=f"{name}: {format_bytes(value)}<extra></extra>", row=1, col=2)
        fig.update_yaxes(title_text="MiB", row=1, col=2)
        fig.update_layout(barmode="stack")
    fig = style_figure(fig, _memory_title(memory), "", "MiB (log)", height=400)
    return fig.update_layout(margin=dict(b=70), legend=dict(y=-0.35))


def _memory_title(memory) -> str:
    if memory is None:
        return "Memory (n/a)"
    share = f", {memory.extra_bytes / memory.target_param_bytes:.1%} of the target's weights" \
        if memory.target_param_bytes else ""
    return f"Memory ({memory.device}): extra {format_bytes(memory.extra_bytes)}{share}"


def run_figures(events, spec=None, baseline=None, memory=None) -> dict[str, go.Figure]:
    """The four run plots; spec / baseline are RunResults when known (else the events are used)."""
    return {
        "plot_acceptance": acceptance_by_position_figure(events),
        "plot_lengths": accepted_length_figure(events),
        "plot_throughput": throughput_figure(spec or events, baseline),
        "plot_memory": memory_figure(memory),
    }
