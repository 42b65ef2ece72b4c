"""The "Why this speedup?" tab's layout and wiring (API: `cost_model`): the device, dtype, α and K values, the
prediction redrawn whenever one of them or the sidebar's pair or K changes, and "Measure on this machine" on the
device's queue slot (callbacks.py)."""
from __future__ import annotations

from functools import partial

from specdec.measure.device_presets import THIS_MACHINE, device_choices
from specdec.ui.controls import run_controls
from specdec.ui.lab import LabCore, local_paths_allowed
from specdec.ui.tabs.cost.callbacks import DEFAULT_ALPHA, NOT_MEASURED, measure, predict_view
from specdec.ui.views.cheaper_target import FORMAT_COLUMNS
from specdec.ui.views.cost import COLUMNS
from specdec.ui.views.render import render_status
from specdec.ui.wiring import DEVICE, on, on_request, on_stop, pick

import gradio as gr
import pandas as pd

DTYPES = ["auto", "float32", "bfloat16", "float16"]
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
    with gr.Accordion("When the target gets cheaper: weight formats (float32, float16, Q8_0, Q4_1)", open=True):
        c["cost_formats_note"] = gr.HTML("", elem_id="cost-formats-note")
        c["cost_formats_figure"] = gr.Plot(elem_id="cost-formats", show_label=False, label="Speedup vs K by format")
        c["cost_formats_table"] = gr.Dataframe(pd.DataFrame(columns=FORMAT_COLUMNS), elem_id="cost-formats-table",
                                               label="Each weight format: bytes a token, step, c, best K, speedup")
    c["cost_state"] = gr.State(None)


def wire(lab: LabCore, c: dict, session) -> None:
    allow = local_paths_allowed(lab)
    view_in = [c[n] for n in ("target", "draft", "target_custom", "draft_custom", "k", "cost_device", "cost_dtype",
                              "cost_alpha", "cost_state")]
    view_out = pick(c, summary="cost_summary", roofline="cost_roofline", speedup="cost_speedup", table="cost_table",
                    formats_note="cost_formats_note", formats_figure="cost_formats_figure",
                    formats_table="cost_formats_table", status="cost_status", error="cost_error")
    show = partial(predict_view, allow_local_paths=allow)
    for trigger in (c["cost_device"].change, c["cost_dtype"].change, c["cost_alpha"].release, c["k"].release,
                    c["target"].change, c["draft"].change):
        on(trigger, show, view_in, view_out, api_visibility="private")
    on_request(c["cost_measure"].click, partial(measure, lab, allow_local_paths=allow), c, session,
       {**view_out, **pick(c, state="cost_state", alpha="cost_alpha")}, extra=("cost_device", "cost_dtype", "cost_ks"),
       api_name="cost_model", concurrency_id=DEVICE, concurrency_limit=1, gpu_s=300, run_id=c["run_id"],
       show_progress_on=[c["cost_speedup"]])
    on_stop(c["cost_stop"].click, lab, session, c["run_id"], "cost_model", pick(c, status="cost_status"),
            api_visibility="private")
