"""Sweep tab: the callback, its figures (measured vs theory) and its table; pure apart from gr.Progress."""
from __future__ import annotations

from dataclasses import asdict

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specdec.sweep import SweepRunner, add_theory, parse_ks, parse_temperatures, plan_sweep, theory_curve

from .callbacks import Lab, error_update, make_settings
from .models import pick_name
from .plots import style_figure
from .render import render_status
from .session import Session
from .tables import export_dataframe

PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
TABLE_COLUMNS = ["draft", "temperature", "k", "acceptance_rate", "alpha", "tokens_per_forward", "tokens_per_s",
                 "baseline_tokens_per_s", "speedup", "theory_speedup", "c", "c_pooled", "draft_forward_ms",
                 "target_forward_ms", "best_measured", "theory_best_k", "new_tokens"]


def _groups(rows) -> list[tuple[str, float, list]]:
    keys = sorted({(r.draft, r.temperature) for r in rows})
    return [(d, t, sorted((r for r in rows if (r.draft, r.temperature) == (d, t)), key=lambda r: r.k))
            for d, t in keys]


def _label(draft: str, temperature: float, many_drafts: bool) -> str:
    return (f"{draft}, " if many_drafts else "") + f"T={temperature:g}"


def acceptance_figure(rows) -> go.Figure:
    fig, many = go.Figure(), len({r.draft for r in rows}) > 1
    for i, (d, t, members) in enumerate(_groups(rows)):
        fig.add_scatter(x=[r.k for r in members], y=[r.acceptance_rate for r in members], mode="lines+markers",
                        name=_label(d, t, many), line=dict(color=PALETTE[i % len(PALETTE)]))
    fig.update_yaxes(range=[0, 1.05])
    return style_figure(fig, "Acceptance rate vs K (accepted / drafted)", "K", "acceptance rate")


def speedup_figure(rows) -> go.Figure:
    """Measured speedup (solid, best K starred) and the theory with measured α and c (dashed)."""
    fig, many = go.Figure(), len({r.draft for r in rows}) > 1
    for i, (d, t, members) in enumerate(_groups(rows)):
        color, ks = PALETTE[i % len(PALETTE)], [r.k for r in members]
        label = _label(d, t, many)
        fig.add_scatter(x=ks, y=[r.speedup for r in members], mode="lines+markers", name=f"{label} measured",
                        line=dict(color=color, width=3))
        best = [r for r in members if r.best_measured]
        if best:
            fig.add_scatter(x=[best[0].k], y=[best[0].speedup], mode="markers", name=f"{label} best K={best[0].k}",
                            marker=dict(symbol="star", size=16, color=color, line=dict(width=1, color="black")))
        alpha, c = members[0].alpha, members[0].c_pooled
        if alpha is not None and c is not None:
            dense = list(range(1, max(ks) + 1))
            fig.add_scatter(x=dense, y=theory_curve(alpha, c, dense), mode="lines", line=dict(color=color, dash="dash"),
                            name=f"{label} theory α={alpha:.2f} c={c:.2f} (best K={members[0].theory_best_k})")
    fig.add_hline(y=1.0, line=dict(color="#777", dash="dot"))
    title = "Speedup vs K: measured vs (1−α^(K+1))/((1−α)(Kc+1))"
    return style_figure(fig, title, "K", "speedup (×)", height=380)


def heatmap_figure(rows) -> go.Figure:
    """Measured speedup over K × temperature, one panel per draft."""
    drafts = sorted({r.draft for r in rows})
    fig = make_subplots(rows=1, cols=max(len(drafts), 1), subplot_titles=drafts or [""])
    for col, draft in enumerate(drafts, start=1):
        members = [r for r in rows if r.draft == draft]
        ks, temps = sorted({r.k for r in members}), sorted({r.temperature for r in members})
        grid = {(r.temperature, r.k): r.speedup for r in members}
        z = [[grid.get((t, k)) for k in ks] for t in temps]
        text = [[("–" if v is None else f"{v:.2f}") for v in row] for row in z]
        fig.add_trace(go.Heatmap(x=[str(k) for k in ks], y=[f"T={t:g}" for t in temps], z=z, text=text,
                                 texttemplate="%{text}", colorscale="Cividis", zmid=None,
                                 colorbar=dict(title="×"), showscale=col == 1), row=1, col=col)
    return style_figure(fig, "Measured speedup: K × temperature", "K", "temperature")


def sweep_dataframe(rows) -> pd.DataFrame:
    df = pd.DataFrame([asdict(r) for r in rows], columns=TABLE_COLUMNS)
    return df.round(3)


def sweep_update(rows) -> dict:
    """Figures, table and CSV export of a finished (or stopped) sweep."""
    table = sweep_dataframe(rows)
    return {"sweep_acceptance": acceptance_figure(rows), "sweep_speedup": speedup_figure(rows),
            "sweep_heatmap": heatmap_figure(rows), "sweep_table": table,
            "sweep_export": export_dataframe(table, "specdec-sweep")}


def best_summary(rows) -> str:
    lines = []
    for d, t, members in _groups(rows):
        best = next((r for r in members if r.best_measured), None)
        if best:
            lines.append(f"{d} at T={t:g}: best measured K={best.k} ({best.speedup:.2f}×); theory's best K="
                         f"{best.theory_best_k} with α={best.alpha:.2f}, c={best.c_pooled:.2f}.")
    return render_status(" ".join(lines))


def sweep(lab: Lab, session: Session, prompt, clean_whitespace, target, target_custom, drafts, ks, temperatures,
          max_new_tokens, seed, top_p, top_k, progress=gr.Progress()):
    """Generator for the Sweep tab: every (draft, K, temperature), measured against the baseline."""
    with session.timed_run():
        try:
            k_values, temps = parse_ks(ks), parse_temperatures(temperatures)
            drafts = [d.strip() for d in ([drafts] if isinstance(drafts, str) else drafts or []) if d and d.strip()]
            if not drafts:
                raise ValueError("Pick at least one draft model for the sweep.")
            base = make_settings(k_values[0], temps[0], top_p, top_k, max_new_tokens, seed)
            prep = yield from lab.prepare(prompt, clean_whitespace, pick_name(target, target_custom), drafts)
            runner = SweepRunner(lab.engine.generate, prep.target, dict(zip(drafts, prep.drafts)), prep.ids, base,
                                 session.baselines)
            yield {"status": render_status("Warming up (short untimed runs)…"), "error": ""}
            runner.warm_up()
            points, rows = plan_sweep(drafts, k_values, temps), []
            for i, point in enumerate(points):  # only the progress bar moves meanwhile: no rendering load
                if session.stop_requested:
                    break
                progress((i, len(points)), desc=f"{point.draft}, K={point.k}, T={point.temperature:g}")
                rows.append(runner.measure(point))
            session.sweep_rows = add_theory(rows)
            yield {**sweep_update(rows), "sweep_best": best_summary(rows), "error": "",
                   "status": render_status(f"Sweep finished: {len(rows)} of {len(points)} points measured.")}
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)
