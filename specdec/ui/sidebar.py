"""The sidebar, in the order of a person's questions: which pair (preset, its one-line note, details on demand),
which target and draft, how many draft tokens (K), how random (temperature); then the rest of the decoding
settings; another model by name; and last, collapsed, the engine choice (a vLLM server), absent from a public
deployment whose operator set no server."""
from __future__ import annotations

from specdec.drafters import registry
from specdec.engine.schedules import CONFIDENCE_THRESHOLD, SCHEDULES
from specdec.models import presets
from specdec.planning.choice import AUTO
from specdec.serving.limits import is_public
from specdec.ui.choices import draft_choices
from specdec.ui.defaults import default_draft
from specdec.ui.share_link import build_copy_link
from specdec.ui.vllm import engine as vllm_engine

import gradio as gr


def short_label(preset) -> str:
    """The preset's name as its dropdown shows it: the label before its parenthesis, which fits the sidebar's width
    whole (the note under it says the rest: size and where the weights come from)."""
    return preset.label.split(" (")[0]


def where_from(preset) -> str:
    return ("bundled, works offline" if preset.bundled else
            "fetched once (without a model hub), offline afterwards" if preset.fetched else
            "downloaded from the Hugging Face Hub on first use")


def preset_line(preset) -> str:
    """The preset's note in one line: size and where the weights come from."""
    return f"About {preset.approx_memory_gb:g} GB of weights, {where_from(preset)}."


def pick_preset(key: str) -> dict:
    """A pair preset fills the target and the draft (the measured default for the default pair); the notes follow
    the models (models_note, on their change)."""
    preset = next((p for p in presets.PAIR_PRESETS if p.key == key), None)
    if preset is None:
        return {}
    default = default_draft()
    draft = default.name if default.name in preset.drafts else preset.drafts[0]
    return {"target": preset.target, "draft": draft}


def draft_hint(draft: str) -> str:
    """The Draft control's line for `draft`: where the default's figure comes from, else what the drafter is."""
    default = default_draft()
    if draft == default.name:
        return default.why()
    spec = registry.registered(draft or "")
    if spec is not None:
        return spec.description
    return "auto: the drafter and K predicted fastest on this machine" if draft == AUTO else "a model used as draft"


def models_note(target: str, draft: str) -> dict:
    """The preset's note and details and the Draft hint for the models now chosen (an exercise, a link or a person
    changed them): the note of the preset whose target this is, none for another target."""
    preset = next((p for p in presets.PAIR_PRESETS if p.target == target), None)
    return {"preset_note": preset_line(preset) if preset else f"Target {target}: not one of the presets.",
            "preset_details": preset.note if preset else "", "draft": gr.update(info=draft_hint(draft))}


def engine_shown() -> bool:
    """The engine choice is offered except on a public deployment without an operator-set server."""
    return not is_public() or bool(vllm_engine.operator_urls()[0])


def build_sidebar(c: dict) -> None:
    first = presets.PAIR_PRESETS[0]
    default = default_draft()
    choices = presets.all_model_choices()
    drafts = [default.name] + [n for n in draft_choices() if n != default.name]  # the default, then auto, …
    c["preset"] = gr.Dropdown([(short_label(p), p.key) for p in presets.PAIR_PRESETS], value=first.key,
                              label="Pair preset", elem_id="preset")
    c["preset_note"] = gr.Markdown(preset_line(first), elem_id="preset-note", elem_classes=["explain-note"])
    with gr.Accordion("About this pair", open=False, elem_id="preset-more"):
        c["preset_details"] = gr.Markdown(first.note, elem_id="preset-details")
    c["target"] = gr.Dropdown(choices, value=presets.DEFAULT_TARGET, label="Target", allow_custom_value=True,
                              elem_id="target")
    c["draft"] = gr.Dropdown(drafts, value=default.name, label="Draft", allow_custom_value=True, elem_id="draft",
                             info=default.why())
    c["k"] = gr.Slider(1, 16, value=default.k, step=1, label="K (draft tokens per step)", elem_id="k")
    c["temperature"] = gr.Slider(0, 2, value=0.0, step=0.05, label="Temperature (0 = greedy)",
                                 elem_id="temperature")
    c["max_new_tokens"] = gr.Slider(1, 512, value=64, step=1, label="Max new tokens")
    c["top_p"] = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="Top-p (1 = off)")
    c["top_k"] = gr.Slider(0, 200, value=0, step=1, label="Top-k (0 = off)")
    c["seed"] = gr.Number(value=0, precision=0, minimum=0, maximum=2**32 - 1, label="Seed")
    c["k_schedule"] = gr.Dropdown(list(SCHEDULES), value="constant", label="K schedule (K above is the largest)",
                                  info=f"constant · heuristic (+2 / −1) · confidence (draft stops below "
                                       f"{CONFIDENCE_THRESHOLD}) · optimal (from measured α and costs) · auto "
                                       "(optimal, and speculation off where it does not pay; the auto draft "
                                       "always runs it)")
    c["chat"] = gr.Checkbox(value=True, label="Chat format (wrap the prompt in the target's chat template)")
    with gr.Accordion("Other model (name or path)", open=False):
        c["target_custom"] = gr.Textbox("", label="Target: Hub id or local folder",
                                        placeholder="overrides the dropdown")
        c["draft_custom"] = gr.Textbox("", label="Draft: Hub id or local folder", placeholder="overrides the dropdown")
    c["projector"] = gr.Checkbox(False, label="Projector mode: larger type, fine print hidden (link: ?projector=1)",
                                 elem_id="projector")
    build_copy_link(c)  # the settings as a link (share_link.py)
    with gr.Accordion("Engine: SpecDec Lab or a vLLM server", open=False, visible=engine_shown(),
                      elem_id="engine-box"):
        vllm_engine.build_engine_controls(c)


# --- a phone's first screen: Draft, K and Temperature beside the prompt ------------------------------------------
# The row's controls mirror the sidebar's both ways, in the browser (no server round trip): the request is read from
# the sidebar's (request_form.FORM), so the row is a second view of the same values. Shown only on a narrow screen
# (style.py: #compact-controls), where the sidebar starts closed; "All settings" opens it.
K_LIMITS, TEMPERATURE_LIMITS = (1, 16), (0, 2)
MIRROR_JS = "(value) => value"
# the sidebar's own value echoed back (it sets the row) is left alone: a K typed in the sidebar outside its range
# reaches the server's check (guard.py: one plain note) and the slider's own clamp, not a silent clamp here
CLAMP_JS = """(value, current) => {{ const v = parseFloat(value);
  if (v === parseFloat(current)) return [current, value];
  if (!Number.isFinite(v)) return [current, current];
  const clamped = Math.min({high}, Math.max({low}, {round}));
  return [clamped, clamped]; }}"""
OPEN_SIDEBAR_JS = """() => { const s = document.querySelector('.sidebar:not(.open) .toggle-button');
  if (s) s.click(); }"""


def build_compact_controls(c: dict) -> None:
    """Draft, K and Temperature in one row, and "All settings" (which opens the sidebar); build_sidebar first."""
    with gr.Row(elem_id="compact-controls", equal_height=True):
        c["draft_compact"] = gr.Dropdown(c["draft"].choices, value=c["draft"].value, label="Drafter",
                                         allow_custom_value=True, scale=3, min_width=150, elem_id="draft-compact")
        c["k_compact"] = gr.Number(c["k"].value, label="K", minimum=K_LIMITS[0], maximum=K_LIMITS[1], precision=0,
                                   scale=1, min_width=64, elem_id="k-compact")
        c["temperature_compact"] = gr.Number(c["temperature"].value, label="Temp.", minimum=TEMPERATURE_LIMITS[0],
                                             maximum=TEMPERATURE_LIMITS[1], step=0.1, scale=1, min_width=72,
                                             elem_id="temperature-compact")
        c["all_settings"] = gr.Button("All settings", size="sm", scale=1, min_width=90, elem_id="all-settings")


def wire_compact_controls(c: dict) -> None:
    """Each row control and its sidebar twin follow one another (a typed K or temperature clamped to the slider's
    range, an empty one put back); the sidebar's changes, however made (a preset, an example, a link), come back."""
    private = {"api_visibility": "private"}
    c["draft_compact"].input(None, [c["draft_compact"]], [c["draft"]], js=MIRROR_JS, **private)
    c["draft"].change(None, [c["draft"]], [c["draft_compact"]], js=MIRROR_JS, **private)
    for name, (low, high), round_ in (("k", K_LIMITS, "Math.round(v)"), ("temperature", TEMPERATURE_LIMITS,
                                                                          "Math.round(v * 100) / 100")):
        row, side = c[f"{name}_compact"], c[name]
        row.change(None, [row, side], [side, row], js=CLAMP_JS.format(low=low, high=high, round=round_), **private)
        side.change(None, [side], [row], js=MIRROR_JS, **private)
    c["all_settings"].click(None, js=OPEN_SIDEBAR_JS, **private)
