"""What the "Across requests" tab shows of a workload run (tabs/workload/callbacks.py): per request, suffix
decoding's and prompt lookup's tokens per target forward and acceptance rate, as two plots, a table and one sentence
in plain words. Plain functions of the rows; suffix in the speculative blue, prompt lookup in orange, dashed, square
markers (a shape cue besides the colour)."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Optional

from specdec.ui.views.plots import COLORS, PALETTE, style_figure

import pandas as pd
import plotly.graph_objects as go

DRAFTERS = {"suffix": ("Suffix decoding", COLORS["spec"], "solid", "circle"),
            "prompt-lookup": ("Prompt lookup", PALETTE[4], "dash", "square")}
STYLE = ("<style>.workload-summary { font-size: 1.15em; line-height: 1.45; margin: 6px 0; } "
         "body.projector .workload-summary { font-size: 26px; }</style>")
TABLE_COLUMNS = ["Request", "New tokens", "Suffix: tokens per target forward", "Prompt lookup: tokens per target forward",
                 "Suffix: accepted / drafted", "Prompt lookup: accepted / drafted", "Same text"]


@dataclass
class RequestRow:
    """One request of the workload, decoded by each drafter (greedy)."""

    request: int  # 1 for the first
    tokens: int
    per_forward: dict  # drafter -> new tokens / target forwards
    acceptance: dict  # drafter -> accepted / drafted tokens (None: it drafted nothing)
    forwards: dict  # drafter -> target forwards
    same: bool  # both drafters wrote the same tokens (each is the target's own greedy output)


def _series(fig: go.Figure, rows: list[RequestRow], value) -> go.Figure:
    for key, (label, colour, dash, marker) in DRAFTERS.items():
        fig.add_trace(go.Scatter(x=[r.request for r in rows], y=[value(r, key) for r in rows], name=label,
                                 mode="lines+markers", line=dict(color=colour, dash=dash, width=3),
                                 marker=dict(symbol=marker, size=9, color=colour)))
    fig.update_xaxes(dtick=1)
    return fig


def per_forward_figure(rows: list[RequestRow]) -> go.Figure:
    fig = _series(go.Figure(), rows, lambda r, key: r.per_forward[key])
    fig.add_hline(y=1.0, line=dict(color=COLORS["target"], dash="dot"), annotation_text="the target alone: 1",
                  annotation_position="bottom right")
    return style_figure(fig, "Tokens per target forward, request by request", "request (in order)",
                        "tokens per target forward")


def acceptance_figure(rows: list[RequestRow]) -> go.Figure:
    fig = _series(go.Figure(), rows, lambda r, key: None if r.acceptance[key] is None else 100 * r.acceptance[key])
    fig.update_yaxes(range=[0, 100])
    return style_figure(fig, "Acceptance rate: drafted tokens the target kept", "request (in order)", "% accepted")


def table(rows: list[RequestRow]) -> pd.DataFrame:
    def rate(value: Optional[float]) -> str:
        return "drafted nothing" if value is None else f"{100 * value:.0f}%"

    return pd.DataFrame([[r.request, r.tokens, f"{r.per_forward['suffix']:.2f}", f"{r.per_forward['prompt-lookup']:.2f}",
                          rate(r.acceptance["suffix"]), rate(r.acceptance["prompt-lookup"]), "yes" if r.same else "NO"]
                         for r in rows], columns=TABLE_COLUMNS)


def pooled(rows: list[RequestRow], key: str) -> float:
    """All the rows' tokens / all their target forwards."""
    return sum(r.tokens for r in rows) / max(1, sum(r.forwards[key] for r in rows))


def summary(rows: list[RequestRow], total: int) -> str:
    """One sentence in plain words: the first request against the later ones, for both drafters."""
    if not rows:
        return ""
    first, later = rows[0], rows[1:]
    if not later:
        text = (f"Request 1 of {total}: suffix decoding made {first.per_forward['suffix']:.2f} tokens per target "
                f"forward, prompt lookup {first.per_forward['prompt-lookup']:.2f}. It has no earlier answer to learn "
                "from yet.")
    else:
        s, p = pooled(later, "suffix"), pooled(later, "prompt-lookup")
        text = (f"Suffix decoding: {first.per_forward['suffix']:.2f} tokens per target forward on the first request, "
                f"{s:.2f} on the {len(later)} after it (prompt lookup: {first.per_forward['prompt-lookup']:.2f}, then "
                f"{p:.2f}). On the later requests suffix makes {s / p:.2f}× prompt lookup's tokens per forward.")
    same = "Both wrote the same text on every request." if all(r.same for r in rows) else \
        "The two outputs differ on a request: that is a bug, please report it."
    return f'{STYLE}<div class="workload-summary"><b>{escape(text)}</b> {escape(same)}</div>'
