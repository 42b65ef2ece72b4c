"""The "Under load" tab's layout and wiring: a load measurement's curves (callbacks.py draws them from the record in
`load_record`, views/load.py renders), the runs and devices to show, the coloured requests, the exports, and a live
load test on the sidebar's vLLM servers (API: `load_test`; not on a public deployment)."""
from __future__ import annotations

from specdec.measure.device_presets import device_choices
from specdec.ui.controls import run_controls
from specdec.ui.lab import LabCore
from specdec.ui.session import Session
from specdec.ui.tabs.load.callbacks import (
    DEFAULT_DEVICES,
    LIVE_LIMITS,
    export,
    live_allowed,
    run_choices,
    run_live,
    shipped_record,
    show,
)
from specdec.ui.views.load import TABLE_COLUMNS
from specdec.ui.views.tables import empty_table
from specdec.ui.wiring import DEVICE, on, on_stop, pick

import gradio as gr

INTRO = """**Speculation under load.** A server runs all the requests it holds in one forward per step. Alone, a
request's step is bound by reading the weights, so verifying K + 1 tokens costs little more than one; with many
requests at once the step does real work for every row, and verifying K + 1 rows per request costs nearly K + 1
times as much. The plots show throughput and per-request latency as concurrent requests grow, speculative against
the same server without speculation; the **crossover** (red dashed line) is the lowest concurrency whose measured
speedup interval lies at or below 1×. The dotted lines are the cost model's prediction (docs/cost_model.md, "With a
batch"): tick a device to see where the curve would bend there."""
VIEW = ("load_source", "load_summary", "load_throughput", "load_latency", "load_speedup", "load_fates", "load_table",
        "load_fate_c")
LIVE_NOTE = ("**Measure it live**: start a pair (`python -m specdec vllm serve --method ngram --k 4 --baseline`), choose "
             "Engine: vLLM server in the sidebar with both URLs, then run. Each concurrency takes a minute or more on a "
             "small CPU; the servers must be on this machine.")
PUBLIC_NOTE = "A live load test is not offered on this public deployment: the figures are the shipped measurement's."


def build(c: dict) -> None:
    gr.Markdown(INTRO, elem_id="load-intro")
    record = shipped_record()
    first = show(Session(), record, 0, DEFAULT_DEVICES, None)
    c["load_record"] = gr.State(record)
    c["load_source"] = gr.HTML(first["load_source"], elem_id="load-source-box", show_label=False, min_height=0)
    choices = run_choices(record)
    with gr.Row():
        c["load_run"] = gr.Dropdown(choices, value=choices[0][1] if choices else None, label="Method and K",
                                    elem_id="load-run", scale=2)
        c["load_devices"] = gr.CheckboxGroup(device_choices(), value=DEFAULT_DEVICES, elem_id="load-devices",
                                             label="Cost model's prediction on", scale=3)
    c["load_summary"] = gr.HTML(first.get("load_summary", ""), elem_id="load-summary", show_label=False, min_height=0)
    with gr.Row():
        c["load_throughput"] = gr.Plot(first.get("load_throughput"), elem_id="load-throughput", show_label=False,
                                       label="Throughput against concurrency")
        c["load_latency"] = gr.Plot(first.get("load_latency"), elem_id="load-latency", show_label=False,
                                    label="Time per output token against concurrency")
    c["load_speedup"] = gr.Plot(first.get("load_speedup"), elem_id="load-speedup", show_label=False,
                                label="Speedup against concurrency, measured and predicted")
    fate = first.get("load_fate_c", {})
    with gr.Accordion("A few requests of the batch, coloured by fate", open=False, elem_id="load-fates-box"):
        c["load_fate_c"] = gr.Dropdown(fate.get("choices", []), value=fate.get("value"), label="Concurrency",
                                       elem_id="load-fate-c")
        c["load_fates"] = gr.HTML(first.get("load_fates", ""), elem_id="load-fates", show_label=False)
    c["load_table"] = gr.Dataframe(first.get("load_table", empty_table(TABLE_COLUMNS)), label="Per concurrency and "
                                   "engine", elem_id="load-table", max_height=320)
    with gr.Row():
        c["load_export"] = gr.Button("Export the rows (CSV + JSON)", elem_id="load-export", scale=1)
        c["load_files"] = gr.File(label="Exported files", file_count="multiple", elem_id="load-files", scale=2)
    if live_allowed():
        with gr.Accordion("Measure on the sidebar's vLLM servers", open=False, elem_id="load-live"):
            gr.Markdown(LIVE_NOTE)
            with gr.Row():
                c["load_concurrency"] = gr.Textbox("1,2,4,8", label="Concurrency", elem_id="load-concurrency")
                c["load_tokens"] = gr.Slider(*LIVE_LIMITS["max_new_tokens"], value=32, step=8,
                                             label="Output tokens a request", elem_id="load-tokens")
                c["load_pairs"] = gr.Slider(*LIVE_LIMITS["pairs"], value=6, step=1, label="Timed pairs (6: an "
                                            "interval)", elem_id="load-pairs")
            run_controls(c, "load", "Run the load test", run_key="measure")
    else:
        gr.Markdown(PUBLIC_NOTE, elem_id="load-public-note")


def wire(lab: LabCore, c: dict, session) -> None:
    inputs = [session, c["load_record"], c["load_run"], c["load_devices"], c["load_fate_c"]]
    for trigger in (c["load_record"].change, c["load_run"].change, c["load_devices"].change,
                    c["load_fate_c"].input):
        on(trigger, show, inputs, pick(c, *VIEW), api_visibility="private")
    on(c["load_export"].click, export, [c["load_record"]], pick(c, "load_files"), api_visibility="private")
    if "load_measure" in c:
        on(c["load_measure"].click, run_live, [session, c["load_concurrency"], c["load_tokens"], c["load_pairs"]],
           pick(c, "load_record", "load_run", status="load_status", error="load_error"), api_name="load_test",
           concurrency_id=DEVICE, concurrency_limit=1, run_id=c["run_id"])
        on_stop(c["load_stop"].click, lab, session, c["run_id"], "load_test", pick(c, status="load_status"),
                api_visibility="private")
