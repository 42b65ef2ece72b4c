"""Plotly figures for one run: pure functions from StepEvents / MemoryReport to go.Figure."""
from __future__ import annotations

import plotly.graph_objects as go

from specdec.metrics import position_counts

from specdec.theory import compute_stats, result_stats, step_seconds

COLORS = {"accepted": "#009E73", "rejected": "#D55E00", "resampled": "#E69F00", "bonus": "#0072B2",
          "target": "#777777", "spec": "#0072B2", "theory": "#CC79A7"}


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
                    line=dict(dash="dot", color=COLORS["bonus"]))
    fig.update_yaxes(range=[0, 1.05])
    fig.update_xaxes(dtick=1)
    return style_figure(fig, "Acceptance by draft position", "draft position", "fraction")


def accepted_length_figure(events) -> go.Figure:
    """Accepted draft tokens per step, with the step's K and the tokens it emitted."""
    steps = [e.index for e in events]
    fig = go.Figure()
    fig.add_bar(x=steps, y=[e.num_accepted for e in events], name="accepted drafts",
                marker_color=COLORS["accepted"])
    fig.add_bar(x=steps, y=[len(e.emitted_ids) - min(e.num_accepted, len(e.emitted_ids)) for e in events],
                name="target token (correction/bonus)", marker_color=COLORS["resampled"])
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
        tps = (compute_stats(events) if total is None else result_stats(run)).tokens_per_s
        times, tokens = _cumulative(events, total)
        fig.add_scatter(x=times, y=tokens, mode="lines", name=f"{name}: {tps or 0:.1f} tok/s",
                        line=dict(color=color, width=3, shape="hv"))
    title = "Tokens over time: one timed pair" if baseline else "Tokens over time: the streamed run"
    return style_figure(fig, title, "engine time (s)", "tokens")


def memory_figure(memory) -> go.Figure:
    """Target weights, draft weights, each KV cache, and the peak (device) or process RSS."""
    fig = go.Figure()
    if memory is not None:
        parts = [("target weights", memory.target_param_bytes), ("draft weights", memory.draft_param_bytes),
                 ("target KV cache", memory.target_kv_bytes), ("draft KV cache", memory.draft_kv_bytes)]
        if memory.peak_device_bytes is not None:
            parts.append(("peak device", memory.peak_device_bytes))
        if memory.process_rss_bytes is not None:
            parts.append(("process RSS", memory.process_rss_bytes))
        mib = [v / 2**20 for _, v in parts]
        fig.add_bar(x=[n for n, _ in parts], y=mib, text=[f"{v:.1f}" for v in mib], textposition="auto",
                    marker_color=["#0072B2", "#56B4E9", "#009E73", "#8FD6B8", "#777777", "#AAAAAA"][:len(parts)])
    return style_figure(fig, f"Memory ({memory.device if memory else 'n/a'})", "", "MiB")


def run_figures(events, spec=None, baseline=None, memory=None) -> dict[str, go.Figure]:
    """The four run plots; spec / baseline are RunResults when known (else the events are used)."""
    return {
        "plot_acceptance": acceptance_by_position_figure(events),
        "plot_lengths": accepted_length_figure(events),
        "plot_throughput": throughput_figure(spec or events, baseline),
        "plot_memory": memory_figure(memory),
    }
