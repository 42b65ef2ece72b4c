"""Components several tabs build the same way: a timed run's controls, and an "SVG" button in every plot's toolbar
(plotly's own camera gives PNG)."""
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


def svg_download_js(elem_id: str) -> str:
    """Browser-side: plotly.js (loaded by gr.Plot) writes the plot in #elem_id as an SVG file."""
    return (f"() => {{ const plot = document.querySelector('#{elem_id} .js-plotly-plot'); "
            f"if (plot && window.Plotly) window.Plotly.downloadImage(plot, "
            f"{{format: 'svg', filename: 'specdec-{elem_id}'}}); }}")


def add_svg_buttons(c: dict) -> None:
    """Puts an "SVG" button in the toolbar of every gr.Plot in `c` that has an elem_id (call it inside the
    Blocks, after the plots exist). The click runs in the browser only: no server round trip."""
    for plot in c.values():
        if isinstance(plot, gr.Plot) and plot.elem_id:
            button = gr.Button("SVG", size="sm", render=False, elem_id=f"{plot.elem_id}-svg",
                               elem_classes=["svg-download"])
            plot.buttons = [*(plot.buttons or []), button]
            button.click(None, js=svg_download_js(plot.elem_id), api_visibility="private")
