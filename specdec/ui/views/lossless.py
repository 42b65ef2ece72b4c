"""The "Is it exact?" tab's views: the greedy comparison (both decoders' tokens, the first difference marked), the
sampling test's verdict with its threshold and facts, and the histogram of the first tokens against the target's
exact probabilities; plain functions of specdec/exactness/lossless.py's GreedyCheck and SamplingCheck."""
from __future__ import annotations

from html import escape

from specdec.ui.views.plots import COLORS, style_figure
from specdec.ui.views.render import render_key_result

import plotly.graph_objects as go


def _token(text: str, cls: str = "") -> str:
    shown = escape(text).replace("\n", "↵").replace(" ", "·") or "∅"
    style = {"diff": "background:#D55E00;color:#fff;font-weight:bold", "after": "opacity:.45", "": ""}[cls]
    marker = ' data-diff="first"' if cls == "diff" else ""
    return (f'<span class="lossless-tok"{marker} style="border:1px solid #bbb;border-radius:3px;padding:0 2px;'
            f'margin:1px;display:inline-block;{style}">{shown}</span>')


def _row(name: str, texts: list[str], first) -> str:
    spans = "".join(_token(t, "" if first is None or i < first else ("diff" if i == first else "after"))
                    for i, t in enumerate(texts))
    return f'<div class="lossless-row"><b>{escape(name)}</b> ({len(texts)} tokens): {spans}</div>'


def render_greedy(greedy) -> str:
    """The greedy comparison: which verifier the speculative side ran (named when a broken one was chosen, with the
    rule its greedy side applied: the broken rule's greedy form, or the real rule where the fault is sampling's), the
    first difference and its cause, then both decoders' tokens."""
    where = "" if greedy.identical else f"first difference at generated token {greedy.first_difference + 1}. "
    under = f" with the verifier '{greedy.verifier}'" if greedy.rule else ""
    head = f"Greedy (T = 0, {greedy.dtype}){under}: {where}{greedy.cause}"
    if greedy.stopped:
        head += " (Stopped before the end.)"
    rule = f'<div class="explain-note" data-greedy-rule>{escape(greedy.rule)}</div>' if greedy.rule else ""
    return (render_key_result(head, "identical" if greedy.identical else "different") + rule
            + _row("speculative", greedy.speculative, greedy.first_difference)
            + _row("target alone", greedy.target_only, greedy.first_difference))


def render_verdict(s) -> str:
    facts = (f"{s.draws:,} draws per side of the first {'token' if s.tokens == 1 else 'two tokens'}, T = "
             f"{s.temperature:g}{f', top-k {s.top_k}' if s.top_k else ''}{f', top-p {s.top_p:g}' if s.top_p else ''}"
             f", verifier: {s.verifier} ({s.verifier_explanation}); first step drafted {describe_drafts(s.drafted)}; "
             f"{s.cells} cells (rare outcomes pooled); "
             f"{s.seconds:.1f} s.")
    notes = "".join(f"<li>{escape(n)}</li>" for n in s.notes)
    return (render_key_result(s.verdict, "exact" if s.passed else "not exact")
            + f'<div class="explain-note"><p><b>Threshold.</b> {escape(s.threshold_meaning)}</p>'
            f"<p>{escape(facts)}</p><ul>{notes}</ul></div>")


def describe_drafts(tokens) -> str:
    if tokens is None:
        return "new tokens every draw"
    return " ".join(repr(t) for t in tokens) or "nothing"


def histogram_figure(s) -> go.Figure:
    """Side by side: the speculative and target-alone frequencies of the shown outcomes, with the target's exact
    probabilities as markers."""
    labels = [escape(b.label) for b in s.bars]
    n = max(s.draws, 1)
    fig = go.Figure()
    fig.add_bar(x=labels, y=[b.speculative / n for b in s.bars], name=f"speculative ({s.verifier})",
                marker_color=COLORS["spec"], customdata=[b.speculative for b in s.bars],
                hovertemplate="%{x}: %{customdata} draws (%{y:.4f})<extra>speculative</extra>")
    fig.add_bar(x=labels, y=[b.target_only / n for b in s.bars], name="target alone", marker_color=COLORS["target"],
                customdata=[b.target_only for b in s.bars],
                hovertemplate="%{x}: %{customdata} draws (%{y:.4f})<extra>target alone</extra>")
    fig.add_scatter(x=labels, y=[b.exact for b in s.bars], mode="markers", name="exact target probability",
                    marker=dict(symbol="line-ew-open", size=28, color="#000", line=dict(width=3)),
                    hovertemplate="%{x}: p = %{y:.4g}<extra>exact</extra>")
    fig.update_layout(barmode="group")
    what = "first token" if s.tokens == 1 else "first two tokens"
    return style_figure(fig, f"The {what}: {s.draws:,} draws each, against the exact probabilities", "outcome",
                        "frequency / probability", height=380)
