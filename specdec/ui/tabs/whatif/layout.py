"""The "What if?" tab: sliders for α, K, c and v(K) that redraw E, the speedup against K (best K marked, the textbook
form beside it), the time of one cycle and a Monte-Carlo histogram of accepted lengths, all in the browser
(views/whatif.js, inline SVG: no server call, no CDN); "Use my run" sends the last run once (views/replay.py) to
put its measured α, c, v(K) and speedup on the same axes and to replay its draft→verify cycles decision by
decision. This module is the layout and its wiring; callbacks.py has the two server calls."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from specdec.measure.device_presets import THIS_MACHINE, device_choices
from specdec.ui.lab import LabCore, local_paths_allowed
from specdec.ui.tabs.whatif.callbacks import preset_curve, use_my_run
from specdec.ui.wiring import on, pick

import gradio as gr

SCRIPT = Path(__file__).resolve().parents[2] / "views" / "whatif.js"
INTRO = """Move the sliders: every figure below is redrawn in your browser, instantly, from the closed forms of
Leviathan et al.: **E = (1 − α^(K+1)) / (1 − α)** tokens per target forward and **speedup = E / (K·c + v(K))**
(dashed: the textbook form, v = 1). v(K) is taken on the line through v(0) = 1 and the slider's v at K. After a
run in the Generate tab, **Use my run** puts its measured α, c and v(K) into the sliders, its measured speedup
(with its 95% interval) on the plot, and its cycles into the replay."""

CSS = """<style>
.wi { font-size: 14px; line-height: 1.45; }
.wi .wi-controls { display: grid; grid-template-columns: repeat(auto-fit, minmax(210px, 1fr)); gap: 8px 18px; }
.wi label { display: flex; flex-direction: column; font-size: 1em; }
.wi label span { display: flex; justify-content: space-between; gap: 6px; }
.wi input[type=range] { width: 100%; accent-color: #0072B2; }
.wi input:focus-visible, .wi button:focus-visible, .wi .wi-replay:focus-visible { outline: 3px solid #F0E442;
  outline-offset: 2px; }
.wi .wi-plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 10px; }
.wi svg { width: 100%; height: auto; background: var(--background-fill-primary); border: 1px solid
  var(--border-color-primary); border-radius: 8px; }
.wi svg text { font-size: 12px; fill: var(--body-text-color); }
.wi svg .wi-title { font-weight: 600; font-size: 13px; }
.wi .wi-summary, .wi .wi-where { font-weight: 600; margin: 6px 0; }
.wi .wi-note, .wi #wi-run-note { color: var(--body-text-color-subdued); }
.wi .wi-buttons { display: flex; flex-wrap: wrap; gap: 6px; margin: 6px 0; }
.wi button { border: 1px solid var(--border-color-primary); border-radius: 6px; padding: 4px 12px;
  background: var(--background-fill-secondary); cursor: pointer; font-size: 1em; }
.wi .wi-replay { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px; min-height: 120px; }
.wi .wi-tokens { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; font-family: ui-monospace, monospace; }
.wi .wi-cell { display: inline-flex; flex-direction: column; align-items: center; gap: 2px; }
.wi .wi-tokens .tok { padding: 2px 6px; }
.wi .wi-tokens small { font-size: .75em; font-family: sans-serif; }
.wi .wi-pending { border: 1px dashed #777; background: rgba(120,120,120,.08); }
.wi .wi-slot { color: var(--body-text-color-subdued); padding: 2px 6px; border: 1px dotted #bbb; border-radius: 3px; }
.wi .wi-forward { background: #56B4E9; color: #000; border-radius: 4px; padding: 3px 8px; margin: 4px 0;
  min-width: 16em; }
.wi .wi-decision { border-left: 4px solid #0072B2; padding: 4px 10px; margin: 6px 0; background:
  var(--background-fill-secondary); }
.projector .wi { font-size: 22px; }
.projector .wi svg text { font-size: 17px; }
.projector .wi svg .wi-title { font-size: 18px; }
.projector .wi .wi-plots { grid-template-columns: 1fr; }
</style>"""


def _slider(name: str, label: str, lo: float, hi: float, step: float, value: float) -> str:
    return (f'<label for="wi-{name}"><span>{label}<output id="wi-{name}-out" for="wi-{name}"></output></span>'
            f'<input type="range" id="wi-{name}" min="{lo}" max="{hi}" step="{step}" value="{value}"></label>')


SHELL = CSS + f"""<div class="wi">
<div class="wi-controls">
{_slider("alpha", "α (accepted / evaluated)", 0, 1, 0.01, 0.8)}
{_slider("k", "K (draft tokens per cycle)", 1, 16, 1, 4)}
{_slider("c", "c (draft forward / target step)", 0, 1, 0.005, 0.05)}
{_slider("v", "v(K) (verify step / target step)", 0.5, 4, 0.01, 1)}
<label style="flex-direction: row; gap: 8px; align-items: center"><input type="checkbox" id="wi-mc">
Monte-Carlo: simulate 2000 cycles</label>
</div>
<div class="wi-summary" id="wi-summary" aria-live="polite"></div>
<div id="wi-run-note"></div><div id="wi-preset-note" class="wi-note"></div>
<div class="wi-plots"><div id="wi-speedup"></div><div id="wi-e"></div><div id="wi-bar"></div>
<div id="wi-hist" hidden></div></div>
<div id="wi-replay-box"><h3>Replay: one draft → verify cycle at a time</h3>
<div class="wi-buttons" role="toolbar" aria-label="Replay controls">
<button id="wi-prev-cycle">« Cycle</button><button id="wi-back">◀ Back</button>
<button id="wi-fwd">Forward ▶</button><button id="wi-next-cycle">Cycle »</button>
<button id="wi-play" aria-pressed="false">▶ Play</button></div>
<div class="wi-replay" id="wi-replay" tabindex="0" aria-label="Replay (← and → step through it)"></div></div>
</div>"""


def script() -> str:
    """The panel's JavaScript (views/whatif.js), run by gr.HTML's js_on_load with `element` as the panel."""
    return SCRIPT.read_text(encoding="utf-8") + "\nwindow.SpecDecWhatIf.mount(element);\n"


LOAD_JS = "(data) => { if (window.SpecDecWhatIf && window.SpecDecWhatIf.load) window.SpecDecWhatIf.load(data); }"
PRESET_JS = ("(data) => { if (window.SpecDecWhatIf && window.SpecDecWhatIf.loadPreset) "
             "window.SpecDecWhatIf.loadPreset(data); }")
LINE = "line through v(0) = 1 and the v(K) slider"


def build(c: dict) -> None:
    """The tab's layout (layout.TABS mounts it inside its gr.Tab)."""
    gr.Markdown(INTRO, elem_classes=["explain"])
    with gr.Row(equal_height=True):
        c["whatif_use"] = gr.Button("Use my run", elem_id="whatif-use", variant="secondary", scale=1)
        c["whatif_device"] = gr.Dropdown([(LINE, "")] + [x for x in device_choices() if x[1] != THIS_MACHINE],
                                         value="", label="v(K) and c from a device preset (the cost model's "
                                         "prediction for the sidebar's pair)", elem_id="whatif-device", scale=3)
    c["whatif_panel"] = gr.HTML(SHELL, js_on_load=script(), elem_id="whatif-panel", label="What if? (drawn in the "
                                "browser)", show_label=False)
    c["whatif_run"] = gr.JSON(None, visible=False, label="The last run, for the What-if panel")
    c["whatif_preset"] = gr.JSON(None, visible=False, label="A device preset's predicted c and v(K)")


def wire(lab: LabCore, c: dict, session) -> None:
    """One server call per press of "Use my run" and per device preset picked; the sliders, plots and replay run in
    the browser."""
    use = on(c["whatif_use"].click, use_my_run, [session], pick(c, "whatif_run"), api_visibility="private")
    use.then(None, [c["whatif_run"]], None, js=LOAD_JS)
    pair = [c[n] for n in ("target", "draft", "target_custom", "draft_custom")]
    curve = on(c["whatif_device"].input, partial(preset_curve, allow_local_paths=local_paths_allowed(lab)),
               [*pair, c["whatif_device"]], pick(c, "whatif_preset"), api_visibility="private")
    curve.then(None, [c["whatif_preset"]], None, js=PRESET_JS)


