"""Components several tabs build the same way."""
from __future__ import annotations

import gradio as gr


def run_controls(c: dict, prefix: str, run_label: str, run_key: str = "run") -> None:
    """A timed run's primary button and Stop in one row, then its status line and error box:
    c[f"{prefix}_{run_key}"], c[f"{prefix}_stop"], c[f"{prefix}_status"], c[f"{prefix}_error"]
    (elem ids {prefix}-btn, -stop, -status, -error)."""
    with gr.Row():
        c[f"{prefix}_{run_key}"] = gr.Button(run_label, variant="primary", elem_id=f"{prefix}-btn", scale=2)
        c[f"{prefix}_stop"] = gr.Button("Stop", variant="stop", elem_id=f"{prefix}-stop", scale=1)
    c[f"{prefix}_status"] = gr.HTML(min_height=0, elem_id=f"{prefix}-status", label="Status", show_label=False)
    c[f"{prefix}_error"] = gr.HTML(min_height=0, elem_id=f"{prefix}-error", label="Error", show_label=False)
