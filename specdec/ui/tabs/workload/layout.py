"""The "Across requests" tab: a learner runs a workload whose requests repeat each other's structure and watches
suffix decoding's tokens per target forward rise from request to request, beside prompt lookup's (callbacks.py
runs it; views/workload.py draws it). The sidebar's target; K and new tokens here."""
from __future__ import annotations

from functools import partial

from specdec.ui.controls import run_controls
from specdec.ui.lab import LabCore
from specdec.ui.tabs.workload.callbacks import run_workload, workload_choices
from specdec.ui.views.tables import empty_table
from specdec.ui.views.workload import TABLE_COLUMNS
from specdec.ui.wiring import DEVICE, on, on_stop, pick

import gradio as gr

INTRO = """**Suffix decoding remembers what the model wrote before.** Pick a workload, a few requests that repeat each
other's structure, and run them in order. After each request the plot adds one point per drafter: how many tokens
each target forward produced. **Suffix decoding** drafts from this request *and every earlier answer*; **prompt
lookup** only from the current request. Watch the blue line climb after the first request. Both decode greedily,
so both write exactly the target's own text."""


def build(c: dict) -> None:
    gr.Markdown(INTRO, elem_id="workload-intro")
    choices = workload_choices()
    with gr.Row():
        c["workload_name"] = gr.Dropdown(choices, value=choices[0][1] if choices else None, label="Workload",
                                         elem_id="workload-name", scale=3)
        c["workload_k"] = gr.Slider(1, 16, value=8, step=1, label="K (largest draft)",
                                    elem_id="workload-k", scale=2)
        c["workload_tokens"] = gr.Slider(16, 256, value=96, step=16, label="New tokens each",
                                         elem_id="workload-tokens", scale=2)
    run_controls(c, "workload", "Run the requests in order")
    c["workload_summary"] = gr.HTML(elem_id="workload-summary", label="Summary", show_label=False, min_height=0)
    with gr.Row():
        c["workload_per_forward"] = gr.Plot(elem_id="workload-per-forward", show_label=False,
                                            label="Tokens per target forward by request")
        c["workload_acceptance"] = gr.Plot(elem_id="workload-acceptance", show_label=False,
                                           label="Acceptance rate by request")
    c["workload_table"] = gr.Dataframe(empty_table(TABLE_COLUMNS), label="Per request (greedy; the sidebar's target)",
                                       elem_id="workload-table", max_height=300)


def wire(lab: LabCore, c: dict, session) -> None:
    on(c["workload_run"].click, partial(run_workload, lab),
       [session, c["workload_name"], c["target"], c["target_custom"], c["workload_k"], c["workload_tokens"]],
       pick(c, "workload_summary", "workload_per_forward", "workload_acceptance", "workload_table",
            status="workload_status", error="workload_error"),
       api_name="workload", concurrency_id=DEVICE, concurrency_limit=1, gpu_s=300, run_id=c["run_id"])
    on_stop(c["workload_stop"].click, lab, session, c["run_id"], "workload", pick(c, status="workload_status"),
            api_visibility="private")
