"""The "Why this speedup?" tab: the cost model's prediction (specdec/measure/cost_model.py) for the sidebar's pair and
K on a device, next to c, v(K) and the speedup measured on this machine with the real runners (a Sweep
over K: specdec/measure/sweep.py). Callbacks are plain functions returning {output name: value} dicts."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from html import escape
from typing import Optional

from specdec.engine.theory import median
from specdec.measure import cost_model as cm
from specdec.measure.device_presets import (
    THIS_MACHINE,
    cached_machine,
    device_choices,
    measure_this_machine,
    preset,
    with_dtype,
)
from specdec.measure.sweep import SweepPoint, SweepRunner, add_theory, parse_ks, plan_sweep, theory_applies
from specdec.models.memory import format_bytes
from specdec.serving.limits import check_sweep_size, current
from specdec.ui.callbacks import Lab, error_update, make_settings
from specdec.ui.controls import run_controls
from specdec.ui.models import pick_name
from specdec.ui.session import Session
from specdec.ui.tabs.sweep_run import integer_k_axis, measure_points
from specdec.ui.views.plots import PALETTE, style_figure
from specdec.ui.views.render import render_key_result, render_status
from specdec.ui.wiring import DEVICE, on, on_stop, pick

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

DTYPES = ["auto", "float32", "bfloat16", "float16"]
DEFAULT_ALPHA = 0.7
COLUMNS = ["K", "c predicted", "c measured", "v(K) predicted", "v(K) measured", "speedup predicted",
           "textbook predicted", "speedup measured", "95% interval"]
NOT_MEASURED = ("This machine is not measured yet: press “Measure on this machine” (its bandwidth, matmul "
                "peak and dispatch overhead first, in about a second, then c, v(K) and the speedup over K with the "
                "real runners), or pick a preset device.")
EXPLAIN = """**How the prediction is made.** A forward over n new tokens reads every weight once, the KV cache
and its activations (**bytes**) and does 2 × weights × n plus attention **FLOPs**; its time is
max(bytes / bandwidth, FLOPs / peak) plus a fixed **overhead** per forward and per layer (launching operations).
Decoding one token does ~1 FLOP per weight byte (fp32: 0.5), far below a GPU's ridge point (peak / bandwidth,
hundreds of FLOP per byte), so it is **bandwidth-bound**: verifying K+1 tokens reads the same weights and costs
about one step, v(K) ≈ 1. Where the ridge is low (a CPU) or the overhead dominates, the picture changes.
On **this machine** the weight products are not put on the roofline but timed by a measured curve: the time per
weight byte of linear layers over M = 1, 2, 3, 5, 9, 17, 64, 256 rows on weights too big for the caches (a CPU
BLAS runs a few rows far below both roofs, so v(K) is well above 1 there).
c = drafting time per token / a target-only step; v(K) = a (K+1)-token target forward / a 1-token one;
speedup = E / (K·c + v(K)), E = (1 − α^(K+1)) / (1 − α) (the textbook form takes v = 1). Measured c and v(K)
come from timed runs of both decoders (the Sweep's definitions: whole steps, bookkeeping included)."""


@dataclass(frozen=True)
class Measured:
    """A measurement of this machine for one pair (kept in the tab's gr.State)."""

    target: str
    draft: str
    rows: tuple  # SweepRows of one draft and temperature over K, add_theory applied
    context: int  # prompt tokens
    dtype: str  # as the models were loaded
    step_s: Optional[float] = None  # median target-only step (1-token forward and bookkeeping) over every pair


def build(c: dict) -> None:
    gr.Markdown("Predict a 1-token step, a (K+1)-token verification, c, v(K) and the speedup from the sidebar's "
                "models and K, on a device; then measure them on this machine and compare.")
    with gr.Row():
        c["cost_device"] = gr.Dropdown(device_choices(), value=THIS_MACHINE, label="Device", scale=3)
        c["cost_dtype"] = gr.Dropdown(DTYPES, value="auto", label="dtype (auto: as the app loads it)", scale=2)
        c["cost_alpha"] = gr.Slider(0, 1, value=DEFAULT_ALPHA, step=0.01, label="α (accepted / evaluated) for the prediction",
                                    scale=3, elem_id="cost-alpha")
        c["cost_ks"] = gr.Textbox("1-8", label="K values to measure", scale=2, elem_id="cost-ks")
    run_controls(c, "cost", "Measure on this machine", run_key="measure")
    c["cost_summary"] = gr.HTML(render_status(NOT_MEASURED), elem_id="cost-summary", label="Prediction",
                                show_label=False)
    with gr.Row():
        c["cost_roofline"] = gr.Plot(elem_id="cost-roofline", show_label=False, label="Roofline")
        c["cost_speedup"] = gr.Plot(elem_id="cost-speedup", show_label=False, label="Speedup vs K")
    c["cost_table"] = gr.Dataframe(pd.DataFrame(columns=COLUMNS), label="Predicted vs measured, per K",
                                   elem_id="cost-table", max_height=320)
    gr.Markdown(EXPLAIN, elem_classes=["explain-note"])
    c["cost_state"] = gr.State(None)


def wire(lab: Lab, c: dict, session) -> None:
    allow = local_paths_allowed(lab)
    view_in = [c[n] for n in ("target", "draft", "target_custom", "draft_custom", "k", "cost_device", "cost_dtype",
                              "cost_alpha", "cost_state")]
    view_out = pick(c, summary="cost_summary", roofline="cost_roofline", speedup="cost_speedup", table="cost_table",
                    status="cost_status", error="cost_error")
    show = partial(predict_view, allow_local_paths=allow)
    for trigger in (c["cost_device"].change, c["cost_dtype"].change, c["cost_alpha"].release, c["k"].release,
                    c["target"].change, c["draft"].change):
        on(trigger, show, view_in, view_out, api_visibility="private")
    settings = [c[n] for n in ("prompt", "clean", "target", "draft", "target_custom", "draft_custom", "k",
                               "temperature", "top_p", "top_k", "max_new_tokens", "seed", "chat")]
    on(c["cost_measure"].click, partial(measure, lab, allow_local_paths=allow),
       [session, *settings, c["cost_device"], c["cost_dtype"], c["cost_ks"]],
       {**view_out, **pick(c, state="cost_state", alpha="cost_alpha")},
       api_name="cost_model", concurrency_id=DEVICE, concurrency_limit=1, gpu_s=300, run_id=c["run_id"],
       show_progress_on=[c["cost_speedup"]])
    on_stop(c["cost_stop"].click, lab, session, c["run_id"], "cost_model", pick(c, status="cost_status"),
            api_visibility="private")


def local_paths_allowed(lab: Lab) -> bool:
    """The Lab's allow_local_paths (its loader is a partial that carries it); False when it cannot tell."""
    return bool(getattr(getattr(lab.load, "__wrapped__", None), "keywords", {}).get("allow_local_paths", False))


# --- callbacks ----------------------------------------------------------------------------------------------

def predict_view(target, draft, target_custom, draft_custom, k, device_key, dtype, alpha,
                 measured: Optional[Measured] = None, *, allow_local_paths: bool = True, machine=cached_machine) -> dict:
    """The prediction for the sidebar's pair on the chosen device, with this machine's measurement beside it
    when one exists for this pair."""
    try:
        target, draft = pick_name(target, target_custom), pick_name(draft, draft_custom)
        device = machine() if device_key == THIS_MACHINE else preset(device_key)
        if device is None:
            return {"summary": render_status(NOT_MEASURED), "status": "", "error": ""}
        mine = measured if measured is not None and (measured.target, measured.draft) == (target, draft) else None
        pred = prediction(target, draft, int(k), device, dtype or "auto", mine, allow_local_paths)
        return render(pred, float(alpha), mine)
    except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
        return error_update(exc)


def prediction(target: str, draft: str, k: int, device, dtype: str, measured: Optional[Measured],
               allow_local_paths: bool = True, measure_peak: bool = False) -> cm.Prediction:
    """The cost model's prediction; on this machine a dtype's peak is measured only when measure_peak (the
    Measure button, on the device's queue slot)."""
    net = cm.target_network(target, allow_local_paths)
    shape = cm.draft_shape(draft, net, allow_local_paths)
    if dtype == "auto" and measured is not None and device.key == THIS_MACHINE:
        dtype = measured.dtype
    dtype = cm.choose_dtype(dtype, device, target, allow_local_paths)
    if device.key == THIS_MACHINE:
        device = with_dtype(device, dtype, measure=measure_peak)
    ks = set(range(1, max(8, k) + 1)) | {r.k for r in (measured.rows if measured else ())}
    return cm.predict(net, shape, device, dtype, k, tuple(sorted(ks)), measured.context if measured else cm.CONTEXT)


def measure(lab: Lab, session: Session, prompt, clean_whitespace, target, draft, target_custom, draft_custom, k,
            temperature, top_p, top_k, max_new_tokens, seed, chat, device_key, dtype, k_values,
            progress=gr.Progress(), *, allow_local_paths: bool = True, machine=measure_this_machine):
    """Generator for the Measure button: this machine's device figures, then a Sweep over the K values (the
    sidebar's pair, temperature and settings; constant K); ends with prediction and measurement side by side
    and the α slider set to the measured α."""
    with session.timed_run():
        try:
            ks = parse_ks(k_values)
            check_sweep_size(1, len(ks), 1, current())
            names = pick_name(target, target_custom), pick_name(draft, draft_custom)
            settings = make_settings(ks[0], temperature, top_p, top_k, max_new_tokens, seed)
            prep = yield from lab.prepare(prompt, clean_whitespace, names[0], [names[1]], chat=chat is not False)
            yield {"status": render_status("Measuring this machine: memory bandwidth, matmul peak, overhead…")}
            device = machine()
            runner = SweepRunner(lab.engine, prep.target, {names[1]: prep.draft}, prep.ids, settings,
                                 session.measurements, lab.sweep_policy, lambda: session.stop_requested)
            rows = yield from measure_points(runner, plan_sweep([names[1]], ks, [settings.temperature]), session,
                                             progress)
            measured = record(names, prep, runner, rows)
            alpha = rows[0].alpha if rows else None  # pooled over K by add_theory
            done = f"Measured {len(rows)} of {len(ks)} K values" + (" (stopped)." if session.stop_requested else ".")
            pred = prediction(*names, int(k), device if device_key == THIS_MACHINE else preset(device_key),
                              dtype or "auto", measured, allow_local_paths, measure_peak=True)
            yield {**render(pred, DEFAULT_ALPHA if alpha is None else alpha, measured), "state": measured,
                   "alpha": gr.skip() if alpha is None else alpha, "status": render_status(done)}
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)


def record(names: tuple[str, str], prep, runner: SweepRunner, rows) -> Measured:
    loaded = str(getattr(prep.target, "dtype", "")).replace("torch.", "")
    return Measured(*names, tuple(add_theory(rows)), len(prep.ids), loaded if loaded in cm.DTYPE_BYTES else "auto",
                    target_step_s(runner, rows))


def target_step_s(runner: SweepRunner, rows) -> Optional[float]:
    """The median target-only step over every timed pair of the measured points (BaselineCosts)."""
    steps = [pair.follow.detail.step_s for row in rows
             for pair in runner.measurement(SweepPoint(row.draft, row.k, row.temperature)).pairs
             if getattr(pair.follow.detail, "step_s", None)]
    return median(steps)


# --- views ---------------------------------------------------------------------------------------------------

def render(pred: cm.Prediction, alpha: float, measured: Optional[Measured]) -> dict:
    comparisons = cm.compare(pred, measured.rows) if measured else []
    return {"summary": summary_html(pred, alpha, measured, comparisons), "roofline": roofline_figure(pred),
            "speedup": speedup_figure(pred, alpha, comparisons), "table": comparison_table(pred, alpha, comparisons),
            "status": "", "error": ""}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _flops(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if x >= scale:
            return f"{x / scale:.1f} {unit}"
    return f"{x:.0f} "


def _num(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def _error(x) -> str:
    return "" if x is None else f" ({x:+.0%})"


def named_costs(pred: cm.Prediction) -> list[tuple[str, str, Optional[cm.Cost]]]:
    """(what, which model, cost) for every forward the tab shows."""
    k1 = pred.k + 1
    call = f"one call for K = {pred.k} tokens" if pred.draft.one_call else "decode, 1 token"
    return [("decode, 1 token", "target", pred.decode), (f"verify, K+1 = {k1} tokens", "target", pred.verify),
            (f"prefill, {pred.context} tokens", "target", pred.prefill),
            (call, "draft", pred.draft_decode), (f"{k1} tokens", "draft", pred.draft_verify),
            (f"prefill, {pred.context} tokens", "draft", pred.draft_prefill)]


def summary_html(pred: cm.Prediction, alpha: float, measured: Optional[Measured], comparisons) -> str:
    dev = pred.device
    head = (f"<b>{escape(dev.label)}</b>, {pred.dtype}: {dev.bandwidth / 1e9:.0f} GB/s, "
            f"{dev.peak(pred.dtype) / 1e12:.3g} TFLOP/s, ridge {dev.peak(pred.dtype) / dev.bandwidth:.3g} FLOP/byte, "
            f"overhead {_ms(dev.forward_overhead_s)} per forward + {_ms(dev.layer_overhead_s)} per layer "
            f"({escape(dev.source)}).{row_curve_text(dev, pred.dtype)} Target {escape(pred.target.name)}: "
            f"{pred.target.params / 1e6:.1f}M matmul "
            f"weights, {pred.target.layers} layers; draft {escape(pred.draft.name)} ({escape(pred.draft.family)})"
            + (f": {pred.draft.network.params / 1e6:.1f}M, {pred.draft.network.layers} layers."
               if pred.draft.network else ": no network, it costs the model nothing (c = 0).")
            + f" Context: {pred.context} tokens.")
    rows = "".join(
        f"<tr><td>{who}: {what}</td><td>{format_bytes(cost.bytes)}</td><td>{_flops(cost.flops)}FLOP</td>"
        f"<td>{cost.intensity:.3g}</td><td>{_ms(cost.memory_s)}</td><td>{_ms(cost.compute_s)}</td>"
        f"<td>{_ms(cost.overhead_s)}</td><td><b>{_ms(cost.time_s)}</b></td><td>{cost.bound}-bound, overhead "
        f"{cost.overhead_share:.0%}</td></tr>"
        for what, who, cost in named_costs(pred) if cost is not None)
    table = ("<table class='fit-table'><tr><th>forward</th><th>bytes</th><th>FLOPs</th><th>FLOP/byte</th>"
             "<th>memory</th><th>compute</th><th>overhead</th><th>predicted</th><th>roofline bound</th></tr>"
             f"{rows}</table>")
    return f'<div class="theory-fit">{head}{table}{key_figures(pred, alpha, measured, comparisons)}</div>'


def row_curve_text(dev, dtype: str) -> str:
    """The measured row curve in words (weight bytes streamed per second by rows), or nothing without one."""
    curve = dev.row_curves.get(dtype)
    if not curve:
        return ""
    rates = ", ".join(f"M = {rows}: {1 / s / 1e9:.1f} GB/s" for rows, s in curve)
    return (f" Linear layers measured over M rows ({rates} of weights): the weight products are timed by this "
            "curve, not the roofline, so 'predicted' differs from max(memory, compute) + overhead.")


def key_figures(pred: cm.Prediction, alpha: float, measured: Optional[Measured], comparisons) -> str:
    c, v = pred.at(pred.k)
    textbook, form = (s[pred.ks.index(pred.k)] for s in pred.speedups(alpha))
    line = (f"At K={pred.k}: predicted c = {c:.3f}, v(K) = {v:.2f}; speedup at α = {alpha:.2f}: "
            f"{form:.2f}× (textbook, v = 1: {textbook:.2f}×).")
    if measured is None:
        return render_key_result(line + " Not measured on this machine for this pair yet.")
    mine = next((x for x in comparisons if x.k == pred.k), None)
    if mine is None:
        return render_key_result(line + f" K={pred.k} was not among the measured K values.")
    row = next(r for r in measured.rows if r.k == pred.k)
    share = "" if theory_applies(row) else (f" The drafter proposed only {row.proposal_share:.0%} of the K tokens a "
                                           "step allows, so the i.i.d. formula does not describe the measured speedup.")
    step = "" if measured.step_s is None else (f" A target-only step: predicted {_ms(pred.decode.time_s)}, measured "
                                               f"{_ms(measured.step_s)}.")
    return render_key_result(
        f"{line}{step} Measured on this machine: c = {_num(mine.c_measured)}{_error(mine.c_error)}, v(K) = "
        f"{_num(mine.v_measured)}{_error(mine.v_error)}, speedup {_num(mine.speedup_measured)}× at α = "
        f"{_num(mine.alpha)} (the prediction at that α: {_num(mine.speedup_predicted)}×).{share}")


def roofline_figure(pred: cm.Prediction) -> go.Figure:
    """Attainable FLOP/s = min(peak, bandwidth × intensity), with each forward on the roof at its intensity;
    hollow markers show what it attains once the overhead is counted."""
    dev, peak = pred.device, pred.device.peak(pred.dtype)
    costs = [(what, who, cost) for what, who, cost in named_costs(pred) if cost is not None]
    ridge = peak / dev.bandwidth
    lo = min([ridge / 100] + [cost.intensity / 3 for _, _, cost in costs])
    hi = max([ridge * 100] + [cost.intensity * 3 for _, _, cost in costs])
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig = go.Figure()
    fig.add_scatter(x=xs, y=[min(peak, dev.bandwidth * x) for x in xs], mode="lines", line=dict(color="#444"),
                    name=f"roof ({pred.dtype}): {dev.bandwidth / 1e9:.0f} GB/s, {peak / 1e12:.3g} TFLOP/s")
    fig.add_scatter(x=[ridge, ridge], y=[peak / 1e3, peak], mode="lines", line=dict(color="#999", dash="dot"),
                    name=f"ridge point: {ridge:.3g} FLOP/byte")
    symbols = ["circle", "diamond", "square"]
    for i, (what, who, cost) in enumerate(costs):
        color = PALETTE[0] if who == "target" else PALETTE[1]
        hover = (f"{who}: {what}<br>{cost.intensity:.3g} FLOP/byte, {cost.bound}-bound<br>predicted "
                 f"{_ms(cost.time_s)}, overhead {cost.overhead_share:.0%}")
        fig.add_scatter(x=[cost.intensity], y=[min(peak, dev.bandwidth * cost.intensity)], mode="markers",
                        name=f"{who}: {what}", hovertext=[hover], hoverinfo="text",
                        marker=dict(color=color, size=12, symbol=symbols[i % 3]))
        fig.add_scatter(x=[cost.intensity], y=[cost.attained_flops], mode="markers", showlegend=i == 0,
                        name="hollow: what it attains with the overhead", legendgroup="overhead",
                        hovertext=[hover + "<br>(with the overhead)"], hoverinfo="text",
                        marker=dict(color=color, size=10, symbol=symbols[i % 3] + "-open"))
    add_row_curve(fig, pred)
    fig.update_xaxes(type="log", range=[math.log10(lo), math.log10(hi)])
    fig.update_yaxes(type="log")
    return legend_below(style_figure(fig, f"Roofline: {dev.label}, {pred.dtype}", "arithmetic intensity (FLOP / byte)",
                                     "attainable FLOP/s", height=520))


def add_row_curve(fig: go.Figure, pred: cm.Prediction) -> None:
    """The measured linear layers (a device's row curve): an M-row product does 2·M FLOP per weight (2·M / bytes
    per weight per byte) at the measured seconds per weight byte."""
    curve = pred.device.row_curves.get(pred.dtype)
    if not curve:
        return
    size = cm.DTYPE_BYTES[pred.dtype]
    xs, ys = [2 * rows / size for rows, _ in curve], [2 * rows / size / s for rows, s in curve]
    fig.add_scatter(x=xs, y=ys, mode="lines+markers", line=dict(color=PALETTE[2], dash="dash"),
                    name="measured linear layers, M = " + ", ".join(str(rows) for rows, _ in curve) + " rows",
                    hovertext=[f"M = {rows} rows: {y / 1e9:.1f} GFLOP/s" for (rows, _), y in zip(curve, ys)],
                    hoverinfo="text", marker=dict(size=7))


def legend_below(fig: go.Figure) -> go.Figure:
    """Room under the plot for a legend of several lines (style_figure's sits just below the axis title)."""
    fig.update_layout(legend=dict(orientation="h", y=-0.22, yanchor="top"), margin=dict(b=150))
    return fig


def speedup_figure(pred: cm.Prediction, alpha: float, comparisons) -> go.Figure:
    textbook, form = pred.speedups(alpha)
    fig = go.Figure()
    fig.add_scatter(x=list(pred.ks), y=form, mode="lines+markers", line=dict(color=PALETTE[0], width=3),
                    name=f"predicted E/(K·c+v(K)), α={alpha:.2f}")
    fig.add_scatter(x=list(pred.ks), y=textbook, mode="lines", line=dict(color=PALETTE[0], dash="dash"),
                    name="predicted textbook E/(K·c+1)")
    if comparisons:
        fig.add_scatter(x=[x.k for x in comparisons], y=[x.speedup_measured for x in comparisons],
                        mode="markers", marker=dict(color=PALETTE[1], size=10), name="measured on this machine",
                        error_y=dict(type="data", symmetric=False, color="#555", thickness=1,
                                     array=[(x.speedup_high - x.speedup_measured) if x.speedup_high else 0
                                            for x in comparisons],
                                     arrayminus=[(x.speedup_measured - x.speedup_low) if x.speedup_low else 0
                                                 for x in comparisons]))
    fig.add_hline(y=1.0, line=dict(color="#777", dash="dot"))
    integer_k_axis(fig, pred.ks)
    return legend_below(style_figure(fig, f"Speedup vs K, predicted for {pred.device.label}", "K", "speedup (×)",
                                     height=520))


def comparison_table(pred: cm.Prediction, alpha: float, comparisons) -> pd.DataFrame:
    textbook, form = pred.speedups(alpha)
    by_k = {x.k: x for x in comparisons}
    records = []
    for k, c, v, t, f in zip(pred.ks, pred.c, pred.v, textbook, form):
        x = by_k.get(k)
        interval = "–" if x is None or x.speedup_low is None else f"{x.speedup_low:.2f}–{x.speedup_high:.2f}"
        records.append([k, c, x and x.c_measured, v, x and x.v_measured, f, t, x and x.speedup_measured, interval])
    return pd.DataFrame(records, columns=COLUMNS).round(3)

