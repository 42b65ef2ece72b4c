"""HTML for a run's tokens, coloured by their fate, with a legend and visible step boundaries.

Every fate has a hue AND a shape (underline style, strike-through, box), so it reads without colour (fates.py:
the same colours in the legend and every plot).
Spans carry classes tests and CSS rely on: tok-accepted, tok-rejected, tok-unchecked, tok-resampled,
tok-bonus, tok-target; data-step / data-pos say where a token came from (for the inspector).
"""
from __future__ import annotations

from html import escape

from specdec.ui.views.fates import FATES



def _visible(text: str, struck: bool) -> str:
    """Escapes token text; newlines show as ↵ (and still break the line unless struck through)."""
    if not text:
        return '<span class="tok-empty">∅</span>'
    if struck:  # never laid out: whitespace is drawn, not applied
        return escape(text).replace(" ", "·").replace("\t", "⇥").replace("\n", "↵")
    return escape(text).replace("\t", "⇥\t").replace("\n", '<span class="nl">↵</span>\n')


def fmt_prob(x: float | None) -> str:
    """Probabilities to 3 decimals, tiny ones in scientific notation (never a misleading 0.000)."""
    if x is None:
        return "–"
    return f"{x:.3f}" if x == 0 or x >= 0.001 else f"{x:.1e}"


def _draft_title(event, d) -> str:
    fate = d.fate if d.evaluated else "discarded unchecked"
    parts = [f"step {event.index} · draft position {d.position + 1} · {fate}", f"q={fmt_prob(d.q)} p={fmt_prob(d.p)}"]
    if d.evaluated:
        draw = f" u={fmt_prob(d.uniform)}" if d.uniform is not None else ""
        parts.append(f"min(1,p/q)={fmt_prob(d.accept_prob)}{draw}")
    return " · ".join(parts)


def _span(fate: str, text: str, step: int, pos: str, title: str, extra: str = "") -> str:
    struck = fate in ("rejected", "unchecked")
    classes = f"tok tok-{fate}" + (" tok-rejected" if fate == "unchecked" else "") + extra
    return (f'<span class="{classes}" data-step="{step}" data-pos="{pos}" title="{escape(title)}">'
            f"{_visible(text, struck)}</span>")


def render_step(event, current: bool = False) -> str:
    """One step: its accepted drafts, its struck-through rejected drafts, then its final token."""
    kept = len(event.emitted_ids)
    spans = []
    for d in event.drafted:
        if d.accepted and d.position >= kept:
            continue  # cut by EOS / max_new_tokens
        fate = d.fate
        spans.append(_span(fate, d.text, event.index, f"d{d.position}", _draft_title(event, d)))
    final = event.final
    if final is not None and final.position < kept:
        title = f"step {event.index} · {FATES[final.kind].name.lower()} · p={fmt_prob(final.p)}"
        spans.append(_span(final.kind, final.text, event.index, "final", title))
    cls = "tok-step tok-step-current" if current else "tok-step"
    return f'<span class="{cls}" data-step="{event.index}">{"".join(spans)}</span>'


def render_tokens(events, prompt: str = "", *, current_step: int | None = None,
                  streaming: bool = False, empty_note: str = "", step_marks: bool = True) -> str:
    """The whole output: prompt (grey), then every step, separated by thin step markers (left out
    with step_marks=False, e.g. for target-only decoding, where every token is its own step)."""
    parts = [f'<span class="tok-prompt">{_visible(prompt, False)}</span>'] if prompt else []
    for event in events:
        if step_marks:
            parts.append(f'<span class="step-mark" title="step {event.index}">{event.index}</span>')
        parts.append(render_step(event, current=event.index == current_step))
    if streaming:
        parts.append('<span class="tok-cursor">▌</span>')
    if not events and empty_note:
        parts.append(f'<span class="tok-note">{escape(empty_note)}</span>')
    return f'<div class="tok-out">{"".join(parts)}</div>'


def render_legend(fates=tuple(FATES)) -> str:
    """Swatches styled exactly like the tokens, each with its name and what it means (the app shows the meaning on
    hover, a report beside the name)."""
    items = "".join(
        f'<span class="legend-item" data-fate="{f}" title="{escape(FATES[f].meaning)}"><span class="tok tok-{f}'
        f'{" tok-rejected" if f == "unchecked" else ""}">token</span> {escape(FATES[f].name)}'
        f'<small> · {escape(FATES[f].meaning)}</small></span>'
        for f in fates)
    mark = '<span class="legend-item"><span class="step-mark">3</span> step boundary (number = step)</span>'
    return f'<div class="tok-legend">{items}{mark}</div>'


def render_error(message: str | None) -> str:
    """A visible error box (empty string when there is nothing wrong)."""
    if not message:
        return ""
    return f'<div class="error-box" role="alert"><b>⚠ Problem:</b> {escape(message)}</div>'


def render_status(message: str | None) -> str:
    if not message:
        return ""
    return f'<div class="status-line">{escape(message)}</div>'


def render_key_result(message: str | None, verdict: str | None = None) -> str:
    """A headline result (race summary, best K), set large and boxed; data-verdict for tests and CSS."""
    if not message:
        return ""
    return (f'<div class="key-result" data-verdict="{escape(verdict or "")}">{escape(message)}</div>')
