"""The Sweep tab (API: `sweep`): drafts × K schedules × K × temperatures, each point a measured speedup
(callbacks.py; vllm.py on vLLM servers; the figures and table: views/sweep.py)."""
from __future__ import annotations

from functools import partial, wraps

from specdec.engine.schedules import SCHEDULES
from specdec.models import presets
from specdec.ui.choices import draft_choices
from specdec.ui.controls import run_controls
from specdec.ui.lab import LabCore
from specdec.ui.tabs.sweep import callbacks as sweep_callbacks
from specdec.ui.tabs.sweep import vllm as vllm_sweep
from specdec.ui.views.sweep import SWEEP_TABLE_NOTE, TABLE_COLUMNS
from specdec.ui.views.tables import empty_table
from specdec.ui.wiring import DEVICE, on_request, on_stop, pick

import gradio as gr

SWEEP_WIDTHS = [100, 78, 27, 27, 85, 27, 71, 71, 107, 71, 56, 63, 78, 92, 56, 27, 49, 49]  # px: scrolls sideways if narrow


def build(c: dict) -> None:
    drafts = draft_choices()
    with gr.Row():
        c["sweep_drafts"] = gr.Dropdown(drafts, value=[], multiselect=True, allow_custom_value=True,
                                        label="Drafts (empty: the sidebar's draft)", scale=3, elem_id="sweep-drafts")
        c["sweep_schedules"] = gr.Dropdown(list(SCHEDULES), value=["constant"], multiselect=True, label="K schedules",
                                           info="an adaptive one's K is the largest K a step may draft",
                                           elem_id="sweep-schedules", scale=2)
        c["sweep_ks"] = gr.Textbox("1-8", label="K values (e.g. 1-8 or 1,2,4,8)", elem_id="sweep-ks", scale=2)
        c["sweep_temps"] = gr.Textbox("0, 0.7, 1.0", label="Temperatures", elem_id="sweep-temps", scale=2)
        c["sweep_tokens"] = gr.Slider(8, 256, value=64, step=8, label="New tokens per run", scale=2,
                                       elem_id="sweep-tokens")
    run_controls(c, "sweep", "Run sweep")
    c["sweep_best"] = gr.HTML(elem_id="sweep-best", label="Best K", show_label=False)
    with gr.Row():
        c["sweep_speedup"] = gr.Plot(elem_id="sweep-speedup", show_label=False, label="Speedup vs K")
        c["sweep_acceptance"] = gr.Plot(elem_id="sweep-acceptance", show_label=False, label="Acceptance vs K")
    c["sweep_memory"] = gr.Plot(elem_id="sweep-memory", show_label=False, label="Speedup vs extra memory")
    c["sweep_heatmap"] = gr.Plot(elem_id="sweep-heatmap", show_label=False, label="Speedup heatmap")
    c["sweep_table"] = gr.Dataframe(empty_table(list(TABLE_COLUMNS.values())), label="Sweep (measured; theory with "
                                    "measured α, c and v(K))", max_height=300, elem_id="sweep-table",
                                    column_widths=SWEEP_WIDTHS)
    gr.Markdown(SWEEP_TABLE_NOTE, elem_classes=["explain-note"])
    c["sweep_export"] = gr.File(label="Sweep table (CSV)")
    gr.Markdown(vllm_sweep.NOTE, elem_id="sweep-vllm-note", elem_classes=["explain-note"])


@wraps(sweep_callbacks.sweep)
def run_sweep(lab: LabCore, session, *args, **kwargs):
    """The Run sweep button: the lab's sweep, or one vLLM server per setting when the sidebar's engine is vLLM."""
    yield from (vllm_sweep.sweep if session.vllm is not None else sweep_callbacks.sweep)(lab, session, *args, **kwargs)


def wire(lab: LabCore, c: dict, session) -> None:
    """Its outputs include How it works' theory_fit (built after this tab)."""
    on_request(c["sweep_run"].click, partial(run_sweep, lab), c, session,
               pick(c, "cleanup", "sweep_acceptance", "sweep_speedup", "sweep_heatmap", "sweep_memory", "sweep_table",
                    "sweep_export", "sweep_best", "theory_fit", status="sweep_status", error="sweep_error"),
               extra=("sweep_drafts", "sweep_ks", "sweep_temps", "sweep_tokens", "sweep_schedules"),
               api_name="sweep", concurrency_id=DEVICE, concurrency_limit=1, gpu_s=300, run_id=c["run_id"],
               show_progress_on=[c["sweep_speedup"]])
    on_stop(c["sweep_stop"].click, lab, session, c["run_id"], "sweep", pick(c, status="sweep_status"),
            api_visibility="private")
