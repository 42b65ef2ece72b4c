"""The Race tab (API: `race`): target-only and speculative decoding side by side (callbacks.py; vllm.py on vLLM
servers), then the measured speedup. Uses the models and settings on the left."""
from __future__ import annotations

from functools import partial, wraps

from specdec.ui.controls import run_controls
from specdec.ui.lab import LabCore
from specdec.ui.tabs.race import callbacks as race
from specdec.ui.tabs.race import vllm as vllm_race
from specdec.ui.wiring import DEVICE, on, on_stop, pick

import gradio as gr


def build(c: dict) -> None:
    gr.Markdown("Both decoders share this device, so they take turns; each clock counts only its own compute, "
                "so the tokens/s you see are what each gets alone. Uses the models and settings on the left. "
                f"With **Engine: vLLM server**, the speculative server races the baseline server. {vllm_race.TURNS}")
    run_controls(c, "race", "Start race")
    c["race_summary"] = gr.HTML(elem_id="race-summary", label="Race summary", show_label=False)
    with gr.Row(equal_height=True):
        c["race_base"] = gr.HTML(elem_id="race-base", label="Target-only lane", show_label=False)
        c["race_spec"] = gr.HTML(elem_id="race-spec", label="Speculative lane", show_label=False)


@wraps(race.race)
def run_race(lab: LabCore, session, *args, **kwargs):
    """The Start race button: the lab's race, or the vLLM servers' when the sidebar's engine is vLLM."""
    yield from (vllm_race.race if session.vllm is not None else race.race)(lab, session, *args, **kwargs)


def wire(lab: LabCore, c: dict, session, settings: list) -> None:
    on(c["race_run"].click, partial(run_race, lab), [session, *settings],
       pick(c, "cleanup", "race_base", "race_spec", "race_summary", status="race_status", error="race_error"),
       api_name="race", concurrency_id=DEVICE, concurrency_limit=1, gpu_s=120, run_id=c["run_id"],
       show_progress_on=[c["race_base"], c["race_spec"]])
    on_stop(c["race_stop"].click, lab, session, c["run_id"], "race", pick(c, status="race_status"),
            api_visibility="private")
