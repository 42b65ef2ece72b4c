"""The "Is it exact?" tab's layout and wiring (API: `lossless`): the draws, the tokens per draw, the verifier (real or
broken on purpose), Check / Stop, the greedy rows, the verdict, the histogram and the JSON the API returns
(callbacks.py)."""
from __future__ import annotations

from functools import partial

from specdec.exactness.verifier_faults import CHOICES, REAL
from specdec.ui.controls import run_controls
from specdec.ui.lab import LabCore
from specdec.ui.tabs.lossless.callbacks import MAX_DRAWS, check
from specdec.ui.wiring import DEVICE, on, on_stop, pick

import gradio as gr

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


def wire(lab: LabCore, c: dict, session, settings: list) -> None:
    on(c["lossless_run"].click, partial(check, lab),
       [session, *settings, c["lossless_draws"], c["lossless_tokens"], c["lossless_verifier"]],
       pick(c, "cleanup", greedy="lossless_greedy", verdict="lossless_verdict", plot="lossless_plot",
            result="lossless_result", status="lossless_status", error="lossless_error"),
       api_name="lossless", concurrency_id=DEVICE, concurrency_limit=1, gpu_s=120, run_id=c["run_id"],
       show_progress_on=[c["lossless_plot"]])
    on_stop(c["lossless_stop"].click, lab, session, c["run_id"], "lossless", pick(c, status="lossless_status"),
            api_visibility="private")
