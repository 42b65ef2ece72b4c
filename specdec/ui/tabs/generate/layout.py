"""The Generate tab: Run / Stop, the coloured tokens, the metric cards, the token inspector and step-through,
the run's plots, its steps table, its exports and the session's report (API: `generate`, `stop`). The callbacks
are Lab's (callbacks.py), plain generators of {output name: value}; this module lays the tab out and binds them."""
from __future__ import annotations

from functools import partial

from specdec.ui.style import TOKEN_CLICK_JS
from specdec.ui.tabs.generate.callbacks import Lab, download_report
from specdec.ui.views.render import render_legend, render_tokens
from specdec.ui.views.tables import STEP_COLUMNS, empty_table
from specdec.ui.wiring import CLASS_LANES, on, on_request, on_stop, pick

import gradio as gr

# The first screen's picture of one draft → verify cycle, in place of empty plots (the fates' classes: style.py).
SKETCH = """<div class="sketch"><div class="sketch-title">What will appear here</div>
<ol><li>The <b>draft</b> proposes K tokens: <span class="tok tok-accepted">the</span>
<span class="tok tok-accepted">cat</span> <span class="tok tok-rejected">ran</span></li>
<li>The <b>target</b> checks them all in one forward pass, keeps the agreeing prefix and adds a token of its own:
<span class="tok tok-accepted">the</span> <span class="tok tok-accepted">cat</span>
<span class="tok tok-resampled">sat</span></li>
<li>Press <b>Run</b>: your prompt's tokens appear coloured this way, then one sentence says how much faster it was
than the target alone, measured here; the inspector opens on the first rejected draft, with plots below.</li></ol>
</div>"""

RUN_STORE_KEY = "specdec-last-run"  # the browser's localStorage key of the last run's record
RUN_STORE_SECRET = "specdec-last-run-v1"  # fixed, as the tour's: the entry stays readable after the app restarts
# the restored run's views replace the first screen's sketch (style.py: body.has-run), as a Run does
SHOW_RESTORED_JS = "() => { if (document.querySelector('#gen-status [data-restored]')) " \
                   "document.body.classList.add('has-run'); }"
# One width per column (tables.STEP_COLUMNS), each holding its header on one line at 12px (style.py) and the
# token columns ("final", "final kind") a whole token: the table scrolls sideways before a token breaks mid-word.
STEP_WIDTHS = ["52px", "40px", "220px", "80px", "110px", "100px", "200px", "76px", "88px", "76px", "90px", "80px"]


def build(c: dict) -> None:
    with gr.Row():
        c["run"] = gr.Button("Run", variant="primary", elem_id="run-btn", scale=2)
        c["stop"] = gr.Button("Stop", variant="stop", elem_id="stop-btn", scale=1)
    c["status"] = gr.HTML(elem_id="gen-status", min_height=0, label="Status", show_label=False)
    c["error"] = gr.HTML(elem_id="gen-error", min_height=0, label="Error", show_label=False)
    # before the first Run the sketch stands where the run's views will be (style.py: .before-run / .after-run)
    c["sketch"] = gr.HTML(SKETCH, elem_id="sketch", label="What will appear here", show_label=False,
                          elem_classes=["before-run"])
    with gr.Column(elem_id="live", elem_classes=["after-run"]):
        gr.HTML(render_legend())
        c["tokens"] = gr.HTML(render_tokens([], empty_note="Press Run: tokens appear here, step by step."),
                              js_on_load=TOKEN_CLICK_JS, elem_id="tokens", max_height=460, autoscroll=True,
                              label="Tokens (HTML, coloured by fate)", show_label=False)
    c["cards"] = gr.HTML(elem_id="cards", label="Metric cards (HTML)", show_label=False)
    with gr.Column(elem_id="results", elem_classes=["after-run"]):
        _results(c)
    # the last run's record, kept in this browser (a reload shows it again: Lab.keep_run, Lab.restore_run)
    c["run_store"] = gr.BrowserState(None, storage_key=RUN_STORE_KEY, secret=RUN_STORE_SECRET)


def _results(c: dict) -> None:
    """What a run fills: the note on timing, the inspector, the plots, the steps table, the exports."""
    gr.Markdown("The tokens above are one streamed run, for watching. The **speedup** comes from separate timed "
                "repeats of speculative and target-only decoding over the same number of tokens, interleaved; it "
                "shows the median with its 95% interval, or *no measurable difference* when the interval "
                "contains 1.", elem_classes=["explain-note", "fine-print"])
    _inspector(c)
    with gr.Row():
        c["plot_acceptance"] = gr.Plot(elem_id="plot-acceptance", show_label=False,
                                       label="Acceptance by draft position")
        c["plot_lengths"] = gr.Plot(elem_id="plot-lengths", show_label=False, label="Accepted length per step")
    with gr.Row():
        c["plot_throughput"] = gr.Plot(elem_id="plot-throughput", show_label=False, label="Tokens over time")
        c["plot_memory"] = gr.Plot(elem_id="plot-memory", show_label=False, label="Memory")
    c["steps_table"] = gr.Dataframe(empty_table(STEP_COLUMNS), label="Steps", wrap=True, max_height=300,
                                    elem_id="steps-table", column_widths=STEP_WIDTHS)
    c["exports"] = gr.File(label="Full trace (CSV per token, JSON with everything)", file_count="multiple")
    build_report_controls(c)


def _inspector(c: dict) -> None:
    with gr.Accordion("Token inspector & step-through (click any token)", open=False,
                      elem_id="inspector") as c["inspector_box"]:
        with gr.Row():
            c["prev"] = gr.Button("◀ Step", size="sm", scale=0, min_width=80)
            c["inspect_step"] = gr.Slider(0, 1, value=0, step=1, label="Step", scale=4)
            c["next"] = gr.Button("Step ▶", size="sm", scale=0, min_width=80)
            c["inspect_pos"] = gr.Dropdown([], label="Token in this step", scale=3, elem_id="inspect-pos")
        c["step_story"] = gr.HTML(elem_id="step-story")
        c["replay"] = gr.HTML(elem_id="replay")
        with gr.Row():
            c["inspect_plot"] = gr.Plot(label="p(x) vs q(x)", show_label=False, elem_id="inspect-plot")
            c["inspect_details"] = gr.HTML(elem_id="inspect-details")


def wire(lab: Lab, c: dict, session) -> None:
    """The tab's and the inspector's events: Run takes the page's request (wiring.on_request)."""
    inspect_out = pick(c, "inspect_step", "inspect_pos", "replay", "step_story", "inspect_plot", "inspect_details")
    run = on_request(c["run"].click, lab.generate, c, session,
             pick(c, "status", "error", "cleanup", "tokens", "cards", "plot_acceptance", "plot_lengths",
                  "plot_throughput", "plot_memory", "steps_table", "exports"),
             api_name="generate", concurrency_id="generate", concurrency_limit=CLASS_LANES, gpu_s=120,
             run_id=c["run_id"],
             show_progress_on=[c["tokens"]])
    on(run.then, lab.first_interesting_step, [session], {**inspect_out, **pick(c, "inspector_box")},
       api_visibility="private")
    on(run.then, lab.keep_run, [session], pick(c, "run_store"), api_visibility="private")
    on_stop(c["stop"].click, lab, session, c["run_id"], "generate", pick(c, "status"), api_name="stop")
    on(c["inspect_step"].release, lab.show_step, [session, c["inspect_step"]], inspect_out, api_visibility="private")
    on(c["prev"].click, partial(lab.step_by, delta=-1), [session, c["inspect_step"]], inspect_out,
       api_visibility="private")
    on(c["next"].click, partial(lab.step_by, delta=1), [session, c["inspect_step"]], inspect_out,
       api_visibility="private")
    on(c["inspect_pos"].input, lab.show_token, [session, c["inspect_step"], c["inspect_pos"]],
       pick(c, "inspect_plot", "inspect_details"), api_visibility="private")
    on(c["tokens"].select, lab.select_token, [session], {**inspect_out, **pick(c, "inspector_box")},
       api_visibility="private")
    wire_report(lab, c, session)


def wire_restore(lab: Lab, c: dict, session, load_trigger) -> None:
    """The page's load event: the last run this browser kept comes back (Lab.restore_run)."""
    outputs = pick(c, "status", "tokens", "cards", "plot_acceptance", "plot_lengths", "plot_throughput",
                   "plot_memory", "steps_table", "exports", "error", "inspect_step", "inspect_pos", "replay",
                   "step_story", "inspect_plot", "inspect_details", "inspector_box")
    restored = on(load_trigger, lab.restore_run, [session, c["run_store"]], outputs, api_visibility="private")
    restored.then(None, js=SHOW_RESTORED_JS, api_visibility="private")


def build_report_controls(c: dict) -> None:
    with gr.Row():
        c["report_btn"] = gr.Button("Download report (HTML)", size="sm", scale=0, min_width=220, elem_id="report-btn")
        # no empty drop zone before a report exists (style.py hides #report-file until it holds a file)
        c["report_file"] = gr.File(label="Report: settings, figures, tables and tokens in one HTML file",
                                   elem_id="report-file", scale=3, interactive=False)


def wire_report(lab: Lab, c: dict, session) -> None:
    on(c["report_btn"].click, partial(download_report, lab), [session],
       {"report_file": c["report_file"], "error": c["error"]}, api_visibility="private")
