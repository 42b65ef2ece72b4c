"""The "Is it exact?" tab (API: `lossless`): greedy token-by-token identity and a sampling test of the first
tokens against the target's exact probabilities (specdec/exactness/lossless.py), with a switch that breaks the
verifier on purpose (specdec/exactness/verifier_faults.py). Callbacks are plain generators of {output name: value}."""
from __future__ import annotations

from dataclasses import asdict
from functools import partial
from html import escape

from specdec.exactness import lossless
from specdec.exactness.verifier_faults import CHOICES, REAL, choose_verifier
from specdec.ui.callbacks import Lab, error_update, make_settings
from specdec.ui.controls import run_controls
from specdec.ui.session import Session
from specdec.ui.throttle import Throttle
from specdec.ui.views.plots import COLORS, style_figure
from specdec.ui.views.render import render_key_result, render_status
from specdec.ui.wiring import DEVICE, on, on_stop, pick

import gradio as gr
import plotly.graph_objects as go

MAX_DRAWS = 20_000
EXPLAIN = ("Speculative decoding claims to be **lossless**: greedy, it emits exactly the target's own tokens; "
           "sampling, its tokens follow exactly the target's distribution. Check both on the sidebar's prompt, "
           "models and settings. **Greedy** runs both decoders at temperature 0 and compares them token by token. "
           "**Sampling** draws the first token (or two) many times from the speculative engine and from the target "
           "alone, with the same temperature, top-k and top-p (T = 1 when the sidebar says 0), and tests both "
           "against the target's exact probabilities. Then **break the verifier** and watch the same test fail.")


def build(c: dict) -> None:
    gr.Markdown(EXPLAIN)
    with gr.Row():
        c["lossless_draws"] = gr.Slider(100, MAX_DRAWS, value=MAX_DRAWS, step=100, label="Draws per side", scale=3,
                                        elem_id="lossless-draws")
        c["lossless_tokens"] = gr.Radio([("first token", 1), ("first two tokens", 2)], value=1, scale=2,
                                        label="Tokens per draw", elem_id="lossless-tokens")
        c["lossless_verifier"] = gr.Dropdown(list(CHOICES), value=REAL, label="Break the verifier", scale=3,
                                             elem_id="lossless-verifier")
    run_controls(c, "lossless", "Check")
    c["lossless_greedy"] = gr.HTML(elem_id="lossless-greedy", label="Greedy comparison", show_label=False)
    c["lossless_verdict"] = gr.HTML(elem_id="lossless-verdict", label="Sampling verdict", show_label=False)
    c["lossless_plot"] = gr.Plot(elem_id="lossless-plot", show_label=False, label="First tokens: histograms")
    with gr.Accordion("The numbers (JSON, as the API returns them)", open=False):
        c["lossless_result"] = gr.JSON(label="Result", elem_id="lossless-result")


def wire(lab: Lab, c: dict, session, settings: list) -> None:
    on(c["lossless_run"].click, partial(check, lab),
       [session, *settings, c["lossless_draws"], c["lossless_tokens"], c["lossless_verifier"]],
       pick(c, "cleanup", greedy="lossless_greedy", verdict="lossless_verdict", plot="lossless_plot",
            result="lossless_result", status="lossless_status", error="lossless_error"),
       api_name="lossless", concurrency_id=DEVICE, concurrency_limit=1, gpu_s=120, run_id=c["run_id"],
       show_progress_on=[c["lossless_plot"]])
    on_stop(c["lossless_stop"].click, lab, session, c["run_id"], "lossless", pick(c, status="lossless_status"),
            api_visibility="private")


def check(lab: Lab, session: Session, prompt, clean_whitespace, target, draft, target_custom, draft_custom, k,
          temperature, top_p, top_k, max_new_tokens, seed, k_schedule="constant", chat=True, draws=MAX_DRAWS,
          tokens=1, verifier=REAL, progress=gr.Progress(), *, checks=lossless):
    """Generator for the tab: load, greedy comparison, then the sampling test (Stop ends either)."""
    with session.timed_run():
        try:
            settings = make_settings(k, temperature, top_p, top_k, max_new_tokens, seed, k_schedule)
            choose_verifier(verifier)  # an unknown name is refused before anything loads
            prep = yield from lab.prepare_pair(prompt, clean_whitespace, target, draft, target_custom, draft_custom,
                                               chat)
            stop, throttle = (lambda: session.stop_requested), Throttle(lab.heavy_interval_s)
            greedy = yield from follow(checks.compare_greedy(prep.target, prep.draft, prep.ids, settings, stop),
                                       throttle, progress)
            yield {"greedy": render_greedy(greedy), "verdict": "", "plot": None, "error": ""}
            sampling = None
            if not session.stop_requested:
                sampling = yield from follow(checks.check_sampling(
                    prep.target, prep.draft, prep.ids, settings, draws=int(draws), tokens=int(tokens),
                    verifier=verifier, should_stop=stop), throttle, progress)
            yield final_update(greedy, sampling)
        except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
            yield error_update(exc)


def follow(steps, throttle: Throttle, progress):
    """`yield from` a check: its Progress becomes a status update, then the progress bar (in that order: an
    update clears the bar until the next call), at most once per throttle interval; returns the check's result."""
    while True:
        try:
            step = next(steps)
        except StopIteration as stop:
            return stop.value
        if throttle.ready():
            yield {"status": render_status(f"Checking: {step.describe()}… (Stop ends it)")}
            progress((step.done, step.total), desc=step.describe())


def final_update(greedy, sampling) -> dict:
    stopped = greedy.stopped or sampling is None or sampling.stopped
    update = {"greedy": render_greedy(greedy), "result": result_json(greedy, sampling), "error": "",
              "status": render_status("Stopped: the results cover what was done until Stop." if stopped else
                                      "Done.")}
    if sampling is not None:
        update.update(verdict=render_verdict(sampling), plot=histogram_figure(sampling))
    return update


def result_json(greedy, sampling) -> dict:
    """Every number of both checks, plain JSON (the API's `result`)."""
    return {
        "greedy": {**asdict(greedy), "identical": greedy.identical},
        "sampling": None if sampling is None else {**asdict(sampling), "passed": sampling.passed,
                                                   "verdict": sampling.verdict},
        "passed": greedy.identical and sampling is not None and sampling.passed,
    }


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
    where = "" if greedy.identical else f"first difference at generated token {greedy.first_difference + 1}. "
    head = f"Greedy (T = 0, {greedy.dtype}): {where}{greedy.cause}"
    if greedy.stopped:
        head += " (Stopped before the end.)"
    return (render_key_result(head, "identical" if greedy.identical else "different")
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
