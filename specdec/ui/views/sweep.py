"""The Sweep's views: its figures (measured vs both theory forms), its table and CSV export, the best-K summary and
How it works' fit table; plain functions of the measured SweepRows (the callback: tabs/sweep/callbacks.py)."""
from __future__ import annotations

from dataclasses import asdict
from html import escape

from specdec.measure.sweep import (
    CONSTANT,
    THEORY_MIN_SHARE,
    compare_schedules,
    fit_errors,
    group_key,
    group_order,
    theory_applies,
)
from specdec.models.memory import format_bytes
from specdec.ui.views.memory_plots import pareto_figure, peak_text
from specdec.ui.views.plots import PALETTE, style_figure
from specdec.ui.views.render import render_key_result, render_status
from specdec.ui.views.tables import export_dataframe

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

# Shown: short headers (explained in SWEEP_TABLE_NOTE); the CSV export has every field of SweepRow.
TABLE_COLUMNS = {"draft": "draft", "schedule": "schedule", "temperature": "T", "k": "K", "acceptance_rate": "acc. rate",
                 "alpha": "α", "tokens_per_forward": "tok/fwd", "speedup": "speedup", "interval": "95% interval",
                 "repeats": "repeats", "extra": "extra", "peak": "peak Δ", "theory_textbook": "textbook",
                 "theory_measured": "meas. form", "theory_free_draft": "c = 0", "c": "c", "v": "v(K)", "best": "best"}
SWEEP_TABLE_NOTE = ("schedule = K schedule (adaptive: K is the largest K a step may draft; no theory drawn) · "
                    "acc. rate = accepted / drafted · α = accepted / evaluated (pooled over K) · tok/fwd = tokens"
                    " per target forward, bonus included · speedup = median of timed pairs (interval: 95%, from 6 "
                    "repeats) · extra = extra memory: draft weights + draft KV cache + verification slots (K target "
                    "KV positions), counted exactly · peak Δ = the speculative run's measured peak over its start "
                    "(GPU: allocator; CPU: process RSS, coarse) · textbook = E / (K·c + 1) · meas. form = E / (K·c + "
                    "v(K)), v(K) from a line fitted over the measured K values · c = 0 = E / v(K): the measured form "
                    "if drafting cost nothing, the most this acceptance can give at this verification cost · c = "
                    "draft forward / target-only step"
                    " · v(K) = a speculative step's target side (verifying K+1 tokens, bookkeeping) / target-only "
                    "step, measured at this K")


def _groups(rows) -> list[tuple[str, str, float, list]]:
    """(draft, schedule, temperature, its rows by K): one line of the figures each."""
    keys = sorted({group_key(r) for r in rows}, key=group_order)
    return [(*key, sorted((r for r in rows if group_key(r) == key), key=lambda r: r.k)) for key in keys]


def _labeller(rows):
    """Names a group by what varies in the sweep: draft (if several), schedule (if several), T."""
    many_drafts, many_schedules = len({r.draft for r in rows}) > 1, len({r.schedule for r in rows}) > 1

    def label(draft: str, schedule: str, temperature: float) -> str:
        return ((f"{draft}, " if many_drafts else "") + (f"{schedule}, " if many_schedules else "")
                + f"T={temperature:g}")
    return label


def integer_k_axis(fig: go.Figure, ks) -> go.Figure:
    fig.update_xaxes(tickmode="array", tickvals=sorted(set(ks)), tickformat="d")
    return fig


def acceptance_figure(rows) -> go.Figure:
    fig, label = go.Figure(), _labeller(rows)
    for i, (d, s, t, members) in enumerate(_groups(rows)):
        fig.add_scatter(x=[r.k for r in members], y=[r.acceptance_rate for r in members], mode="lines+markers",
                        name=f"{label(d, s, t)} acceptance rate", line=dict(color=PALETTE[i % len(PALETTE)]))
        fig.add_scatter(x=[r.k for r in members], y=[r.alpha_point for r in members], mode="lines+markers",
                        name=f"{label(d, s, t)} α", line=dict(color=PALETTE[i % len(PALETTE)], dash="dot"),
                        marker=dict(symbol="diamond"))
    fig.update_yaxes(range=[0, 1.05])
    integer_k_axis(fig, [r.k for r in rows])
    return style_figure(fig, "Acceptance rate (accepted / drafted) and α (accepted / evaluated) vs K", "K",
                        "fraction")


def _error_bars(members) -> dict | None:
    if not any(r.speedup_low is not None for r in members):
        return None
    return dict(type="data", symmetric=False, color="#555", thickness=1,
                array=[(r.speedup_high - r.speedup) if r.speedup_high is not None else 0 for r in members],
                arrayminus=[(r.speedup - r.speedup_low) if r.speedup_low is not None else 0 for r in members])


def speedup_figure(rows) -> go.Figure:
    """Measured speedup with its 95% interval (solid, best K starred; one line per draft, schedule and
    temperature), the textbook form (dashed) and the measured form (dotted), both with the measured α and c
    (constant K only), and the measured form with c = 0 (dash-dot, hidden until its legend entry is clicked)."""
    fig, name = go.Figure(), _labeller(rows)
    for i, (d, s, t, members) in enumerate(_groups(rows)):
        color, ks, label = PALETTE[i % len(PALETTE)], [r.k for r in members], name(d, s, t)
        fig.add_scatter(x=ks, y=[r.speedup for r in members], mode="lines+markers", name=f"{label} measured",
                        line=dict(color=color, width=3), error_y=_error_bars(members))
        best = [r for r in members if r.best_measured]
        if best:
            fig.add_scatter(x=[best[0].k], y=[best[0].speedup], mode="markers", name=f"{label} best K={best[0].k}",
                            marker=dict(symbol="star", size=16, color=color, line=dict(width=1, color="black")))
        alpha, c = members[0].alpha, members[0].c_pooled
        if alpha is not None and c is not None and any(r.theory_textbook is not None for r in members):
            fig.add_scatter(x=ks, y=[r.theory_textbook for r in members], mode="lines",
                            line=dict(color=color, dash="dash"),
                            name=f"{label} textbook v=1 (α={alpha:.2f}, c={c:.2f})")
            fig.add_scatter(x=ks, y=[r.theory_measured for r in members], mode="lines+markers",
                            line=dict(color=color, dash="dot"), marker=dict(symbol="x", size=7),
                            name=f"{label} measured form v(K)")
            fig.add_scatter(x=ks, y=[r.theory_free_draft for r in members], mode="lines",
                            line=dict(color=color, dash="dashdot", width=1), visible="legendonly",
                            name=f"{label} drafting free, c=0 (click to show)")
    fig.add_hline(y=1.0, line=dict(color="#777", dash="dot"))
    integer_k_axis(fig, [r.k for r in rows])
    return style_figure(fig, "Speedup vs K: measured vs E/(K·c+1) and E/(K·c+v(K))", "K", "speedup (×)", height=400)


def heatmap_figure(rows) -> go.Figure:
    """Measured speedup over K × temperature, one panel per draft (and schedule, when several)."""
    panels = sorted({(r.draft, r.schedule) for r in rows}, key=lambda p: group_order((*p, 0.0)))
    titles = [d if len({r.schedule for r in rows}) == 1 else f"{d} · {s}" for d, s in panels]
    fig = make_subplots(rows=1, cols=max(len(panels), 1), subplot_titles=titles or [""])
    for col, panel in enumerate(panels, start=1):
        members = [r for r in rows if (r.draft, r.schedule) == panel]
        ks, temps = sorted({r.k for r in members}), sorted({r.temperature for r in members})
        grid = {(r.temperature, r.k): r.speedup for r in members}
        z = [[grid.get((t, k)) for k in ks] for t in temps]
        text = [[("–" if v is None else f"{v:.2f}") for v in row] for row in z]
        fig.add_trace(go.Heatmap(x=[str(k) for k in ks], y=[f"T={t:g}" for t in temps], z=z, text=text,
                                 texttemplate="%{text}", colorscale="Cividis", zmid=None,
                                 colorbar=dict(title="×"), showscale=col == 1), row=1, col=col)
    return style_figure(fig, "Measured speedup: K × temperature", "K", "temperature")


def _interval(r) -> str:
    return "–" if r.speedup_low is None else f"{r.speedup_low:.2f}–{r.speedup_high:.2f}"


def sweep_dataframe(rows) -> pd.DataFrame:
    """The table as shown: short headers (see SWEEP_TABLE_NOTE), rounded."""
    records = [{**asdict(r), "interval": _interval(r), "best": "★" if r.best_measured else "",
                "extra": format_bytes(r.extra_bytes), "peak": peak_text(r)} for r in rows]
    df = pd.DataFrame(records, columns=list(TABLE_COLUMNS)).round(3)
    return df.rename(columns=TABLE_COLUMNS)


def export_rows(rows) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in rows])


def fit_summary(rows) -> str:
    """Each theory form's error against the measured points, per draft and temperature."""
    lines = []
    for d, s, t, members in _groups(rows):
        if s != CONSTANT:
            continue
        parts = []
        for fit in fit_errors(members):
            if fit.mean is not None:
                parts.append(f"{fit.form} form {fit.mean:+.0%} on average (worst {fit.worst:+.0%})")
        if parts:
            lines.append(f"{d} at T={t:g}: " + "; ".join(parts) + ".")
    return " ".join(lines)


def theory_fit_html(rows) -> str:
    """For How it works: both forms against the last sweep's measured points, with c, v(K) and the measured
    form at c = 0."""
    if not rows:
        return ""
    body = []
    for d, s, t, members in _groups(rows):
        if s != CONSTANT:
            continue
        cells = "".join(f"<tr><td>{r.k}</td><td>{_fmt(r.speedup)}</td><td>{_fmt(r.theory_textbook)}</td>"
                        f"<td>{_fmt(r.theory_measured)}</td><td>{_fmt(r.theory_free_draft)}</td>"
                        f"<td>{_fmt(r.v)}</td><td>{_fmt(r.v_fit)}</td></tr>"
                        for r in members)
        slower = f' <span class="slower-here">({escape(SLOWER_HERE)})</span>' if slower_here(members) else ""
        body.append(f"<h4>{escape(d)}, T={t:g}: α = {_fmt(members[0].alpha)} (accepted / evaluated), "
                    f"c = {_fmt(members[0].c_pooled)}{slower}</h4><table class='fit-table'><tr><th>K</th><th>measured</th>"
                    f"<th>textbook (v = 1)</th><th>measured form (v(K))</th><th>drafting free (c = 0)</th>"
                    f"<th>v(K) measured</th>"
                    f"<th>v(K) line</th></tr>{cells}</table>")
    return (f'<div class="theory-fit"><b>Your last sweep on this machine.</b> {escape(fit_summary(rows))}'
            f'{"".join(body)}</div>')


def _fmt(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def sweep_update(rows) -> dict:
    """Figures, table and CSV export of a finished (or stopped) sweep."""
    return {"sweep_acceptance": acceptance_figure(rows), "sweep_speedup": speedup_figure(rows),
            "sweep_heatmap": heatmap_figure(rows), "sweep_memory": pareto_figure(rows),
            "sweep_table": sweep_dataframe(rows), "sweep_export": export_dataframe(export_rows(rows), "specdec-sweep"),
            "sweep_best": best_summary(rows), "theory_fit": theory_fit_html(rows)}


def group_theory_note(draft: str, temperature: float, members) -> str:
    """Says so where the theory is not drawn: the drafter proposed fewer than K tokens in many steps."""
    shares = [r.proposal_share for r in members if not theory_applies(r) and r.proposal_share is not None]
    if not shares:
        return ""
    return (f"{draft} at T={temperature:g}: no theory where it drafted under {THEORY_MIN_SHARE:.0%} of the K tokens "
            f"a step allows (as little as {min(shares):.0%}): the formulas assume K drafted tokens every step.")


def _measured(row) -> str:
    spread = f"interval {_interval(row)}" if row.speedup_low is not None else f"{row.repeats} repeats"
    return f"{row.speedup:.2f}×, {spread}"


VERDICTS = {"faster": "faster than the best constant K", "slower": "slower than the best constant K",
            "no measurable difference": "no measurable difference (the intervals overlap)",
            None: "too few repeats for both intervals, no comparison"}


def schedule_lines(rows) -> list[str]:
    """Each adaptive schedule's best speedup next to the best constant K's, with their intervals."""
    lines = []
    for cmp in compare_schedules(rows):
        best, const = cmp.best, cmp.constant
        head = (f"{best.draft} at T={best.temperature:g}, {cmp.schedule} schedule: best largest K={best.k} "
                f"({_measured(best)})")
        if const is None:
            lines.append(f"{head}; no constant K in this sweep to compare with.")
            continue
        lines.append(f"{head} vs best constant K={const.k} ({_measured(const)}): {VERDICTS[cmp.verdict]}.")
    return lines


SLOWER_HERE = "slower here: every K measured slower than target-only on this machine"


def slower_here(members) -> bool:
    """Every measured point of one drafter's group has its whole 95% interval below 1 (a drafter with a point of no
    measurable difference, or without intervals yet, is not called slower)."""
    measured = [r for r in members if r.speedup is not None]
    return bool(measured) and all(r.speedup_high is not None and r.speedup_high < 1 for r in measured)


def best_summary(rows) -> str:
    lines = []
    for d, s, t, members in _groups(rows):
        best = next((r for r in members if r.best_measured), None)
        if best and s == CONSTANT and slower_here(members):
            lines.append(f"{d} at T={t:g}: {SLOWER_HERE} (best K={best.k}: {_measured(best)}).")
        elif best and s == CONSTANT:
            theory = (f"; the textbook form's best K={best.theory_best_k} (α={best.alpha:.2f}, c={best.c_pooled:.2f})"
                      if best.theory_best_k else "")
            lines.append(f"{d} at T={t:g}: best measured K={best.k} ({_measured(best)}){theory}.")
    notes = [group_theory_note(d, t, members) for d, s, t, members in _groups(rows) if s == CONSTANT]
    fits = " ".join(filter(None, [fit_summary(rows), *notes]))
    return (render_key_result(" ".join(lines + schedule_lines(rows)))
            + (render_status(f"Theory vs measured: {fits}") if fits else ""))
