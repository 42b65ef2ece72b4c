"""Token inspector and step-through: what the draft proposed, what the target thought, and why.

Pure functions from one StepEvent (and a position key: "d<i>" for drafted token i, "final" for the
target's own token) to choices, a p/q bar chart and an explanation.
"""
from __future__ import annotations

from html import escape

from specdec.ui.views.plots import COLORS, style_figure
from specdec.ui.views.render import fmt_prob

import plotly.graph_objects as go


def _show(text: str) -> str:
    return repr(text)[1:-1] or "∅"


def _fate(d) -> str:
    return d.fate


def position_choices(event) -> list[tuple[str, str]]:
    """Dropdown choices (label, key) for every token of a step."""
    choices = [(f"draft {d.position + 1}: '{_show(d.text)}' · {_fate(d)}", f"d{d.position}") for d in event.drafted]
    if event.final is not None:
        choices.append((f"target: '{_show(event.final.text)}' · {event.final.kind}", "final"))
    return choices


def default_position(event) -> str | None:
    """The most telling token of a step: its first rejection, else its final token, else the first draft."""
    for d in event.drafted:
        if d.evaluated and not d.accepted:
            return f"d{d.position}"
    if event.final is not None:
        return "final"
    return f"d{event.drafted[0].position}" if event.drafted else None


def _token_of(event, key: str):
    if key == "final":
        return event.final
    if key and key.startswith("d") and key[1:].isdigit() and int(key[1:]) < len(event.drafted):
        return event.drafted[int(key[1:])]
    return None


def _bars(chosen_id: int, chosen_text: str, series: dict[str, tuple[list, float | None, str]]) -> go.Figure:
    """Grouped bars over the union of the series' top tokens, each series in its colour; the chosen token first."""
    labels = {chosen_id: chosen_text}
    for top, _, _ in series.values():
        for tp in top:
            labels.setdefault(tp.token_id, tp.text)
    ids = list(labels)
    names = [f"'{_show(labels[i])}'" + (" ◀" if i == chosen_id else "") for i in ids]
    fig = go.Figure()
    for name, (top, chosen_prob, color) in series.items():
        probs = {tp.token_id: tp.prob for tp in top}
        if chosen_prob is not None:
            probs.setdefault(chosen_id, chosen_prob)
        fig.add_bar(x=names, y=[probs.get(i) for i in ids], name=name, marker_color=color)
    fig.update_layout(barmode="group")
    return fig


def inspect_figure(event, key: str) -> go.Figure:
    """p(x) and q(x) of the top tokens at a drafted position; p and the residual for a resampled token."""
    tok = _token_of(event, key)
    if tok is None:
        return style_figure(go.Figure(), "Pick a token to inspect", "", "probability")
    if key == "final":
        from_residual = bool(tok.residual_top)  # then tok.p is its probability under the residual
        series = {"p(x): target": (tok.target_top, None if from_residual else tok.p, COLORS["target"])}
        if from_residual:  # what a resampled token is drawn from: in the resampled fate's colour
            series["norm(max(0, p − q)): residual"] = (tok.residual_top, tok.p, COLORS["resampled"])
        title = f"Step {event.index}, target token '{_show(tok.text)}' ({tok.kind})"
    else:
        series = {"p(x): target": (tok.target_top, tok.p, COLORS["target"]),
                  "q(x): draft": (tok.draft_top, tok.q, COLORS["draft"])}
        title = f"Step {event.index}, draft position {tok.position + 1}: '{_show(tok.text)}'"
    return readable_ticks(style_figure(_bars(tok.token_id, tok.text, series), title, "token (◀ = this one)",
                                       "probability", height=360))


def readable_ticks(fig: go.Figure) -> go.Figure:
    """Token labels fit below the bars: angled, with the bottom margin grown to hold them (automargin),
    and the legend above the plot instead of over the labels."""
    fig.update_xaxes(automargin=True, tickangle=-35, tickfont=dict(size=12))
    fig.update_layout(margin=dict(l=55, r=15, t=70, b=30),
                      legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
                      title=dict(y=0.98, yanchor="top"))
    return fig


def _explain_draft(event, d) -> str:
    head = (f"The draft proposed <b>'{escape(_show(d.text))}'</b> with q(x) = {fmt_prob(d.q)}; "
            f"the target gives p(x) = {fmt_prob(d.p)}.")
    if not d.evaluated:
        return head + " It came after a rejection in this step, so it was <b>discarded unchecked</b>."
    if event.mode == "greedy":
        why = "it is, so it was <b>accepted</b>" if d.accepted else "it is not, so it was <b>rejected</b>"
        return head + f" Greedy decoding accepts a draft token only if it is the target's argmax: {why}."
    verdict = "≤" if d.accepted else ">"
    result = "<b>accepted</b>" if d.accepted else "<b>rejected</b>"
    accept = fmt_prob(d.accept_prob)
    rule = "min(1, p/q)"
    if event.tree_nodes:  # a sampled tree step: rejected earlier siblings change both (verify_tree_sampled)
        rule = "min(1, r/q), r and q being p and q less what rejected earlier siblings took (if any),"
    return (head + f" Accept with probability {rule} = <b>{accept}</b>; the uniform draw "
            f"u = <b>{fmt_prob(d.uniform)}</b> {verdict} {accept}, so it was {result}.")


def _explain_final(event, f) -> str:
    token = f"<b>'{escape(_show(f.text))}'</b>"
    if f.kind == "target":
        return f"Target-only decoding: {token} is the target's own token (p = {fmt_prob(f.p)})."
    if f.kind == "bonus":
        return (f"Every drafted token was accepted, and the verify forward had already computed the target's "
                f"next distribution, so the bonus token {token} (p = {fmt_prob(f.p)}) comes for free.")
    if event.mode == "greedy":
        return f"After the rejection, the target's argmax {token} is emitted instead (greedy: the resampled token is the target's argmax)."
    return (f"After the rejection, the target draws from the residual norm(max(0, p − q)), which removes the "
            f"mass the draft already had its chance at; that keeps the output exactly target-distributed. "
            f"Drawn: {token} with probability {fmt_prob(f.p)}.")


def inspect_details(event, key: str) -> str:
    tok = _token_of(event, key)
    if tok is None:
        return '<div class="explain">Click a token in the output, or pick a step and a token.</div>'
    text = _explain_final(event, tok) if key == "final" else _explain_draft(event, tok)
    return f'<div class="explain">{text}</div>'


def narrate_step(event) -> str:
    """A one-paragraph account of a whole step, for step-through teaching mode."""
    if event.k == 0:
        return f'<div class="explain"><b>Step {event.index}</b>: target-only, one forward, one token.</div>'
    drafted = ", ".join(f"'{escape(_show(d.text))}'" for d in event.drafted)
    if event.tree_nodes and event.mode == "sampling":
        parts = [f"<b>Step {event.index}</b>: the drafter drew a tree of {event.tree_nodes} tokens (each node's "
                 f"children drawn from q without replacement); the target scored every node in one forward, then "
                 f"from the root tried each node's children in the order drawn, accepting one with probability "
                 f"min(1, r/q), r its row of p less what earlier rejected siblings took: <b>{event.num_accepted}"
                 f"</b> accepted. In the output: that branch ({drafted}), ending in the first child tried after it "
                 f"where one was drawn.{tree_html(event)}"]
    elif event.tree_nodes:
        parts = [f"<b>Step {event.index}</b>: the drafter proposed a tree of {event.tree_nodes} tokens; the target "
                 f"scored every node in one forward and kept the branch that matches its own choices: "
                 f"<b>{event.num_accepted}</b> accepted. In the output: that branch ({drafted}), ending in its "
                 f"likeliest rejected token where one was drafted.{tree_html(event)}"]
    else:
        parts = [f"<b>Step {event.index}</b>: the draft proposed K = {event.k} tokens ({drafted}); "
                 f"the target verified them in one forward and accepted <b>{event.num_accepted}</b>."]
    if event.final is not None:
        parts.append(_explain_final(event, event.final))
    if event.finished:
        parts.append(f"The run stopped here ({escape(event.stop_reason or 'finished')}).")
    return f'<div class="explain">{" ".join(parts)}</div>'


def tree_fates(event) -> list[str]:
    """Per node of a tree step: "accepted" (on the kept branch), "rejected" (compared by the verifier and not
    kept) or "unchecked" (never compared: below a rejected node, or, sampling, after an accepted sibling)."""
    return ["accepted" if node.kept else "rejected" if node.evaluated else "unchecked" for node in event.tree]


def tree_html(event) -> str:
    """A tree step's draft as nested lists, each token coloured by its fate (tree_fates); siblings without
    children of their own share one line, so a wide tree (60 nodes) stays a few lines tall."""
    fates = tree_fates(event)
    parents = {node.parent for node in event.tree}

    def token(i: int) -> str:
        return f'<span class="tok tok-{fates[i]}" title="{fates[i]}">{escape(_show(event.tree[i].text))}</span>'

    def children(parent: int) -> str:
        kids = [i for i, node in enumerate(event.tree) if node.parent == parent]
        leaves = [i for i in kids if i not in parents]
        items = [f"<li>{token(i)}{children(i)}</li>" for i in kids if i in parents]
        if leaves:
            items.append(f"<li>{' '.join(token(i) for i in leaves)}</li>")
        return f'<ul class="draft-tree">{"".join(items)}</ul>' if items else ""

    return children(-1)
