"""The page shell: the sidebar (engine, models, decoding), the prompt and the tour above the tabs, and the tabs,
each built and wired by its own module (generate_tab, race_tab, sweep_tab, lossless_tab, cost_tab; How it works
here). Events bind the plain callbacks by output name through wiring.py."""
from __future__ import annotations

from specdec.drafters.families import families_markdown
from specdec.engine.schedules import CONFIDENCE_THRESHOLD, SCHEDULES
from specdec.models import presets
from specdec.planning.choice import AUTO
from specdec.ui.callbacks import Lab
from specdec.ui.preload import preload_update
from specdec.ui.session import Session
from specdec.ui.style import CSS
from specdec.ui.tabs import (
    cost as cost_tab,
)
from specdec.ui.tabs import (
    generate as generate_tab,
)
from specdec.ui.tabs import (
    lossless as lossless_tab,
)
from specdec.ui.tabs import (
    race as race_tab,
)
from specdec.ui.tabs import (
    report,
    tour,
)
from specdec.ui.tabs import (
    sweep as sweep_tab,
)
from specdec.ui.vllm import engine as vllm_engine
from specdec.ui.wiring import on, pick

import gradio as gr

EXAMPLES = [  # prompt, K, temperature, seed, max new tokens; the first three are chat prompts for SmolLM2
    ["Explain photosynthesis in simple terms.", 4, 0.0, 0, 96],
    ["Write a Python function that checks whether a string is a palindrome.", 4, 0.0, 0, 128],
    ["Rewrite this paragraph in plain English, keeping its meaning:\n\nThe committee, having deliberated at "
     "considerable length on the matter of the budget, ultimately resolved to approve the proposal, subject to "
     "the condition that all expenditures be reported to the board on a quarterly basis.", 6, 0.0, 0, 96],
    ["def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n", 4, 0.0, 0, 64],
    ["import os\n\n\ndef list_python_files(folder):\n", 6, 0.0, 0, 64],
    ["The os module provides a portable way of using", 4, 0.7, 1, 64],
    ["A list comprehension is", 3, 1.0, 2, 48],
]
INTRO = """# SpecDec Lab
A small **draft** model proposes K tokens; the **target** checks them all in one forward pass and keeps
the longest agreeing prefix, then adds one token of its own. Modified rejection sampling keeps the output
exactly distributed as the target's. Watch every token's fate, inspect the probabilities behind it, and
measure the speedup against a real target-only run on this machine."""


def pick_preset(key: str) -> dict:
    """A pair preset fills the target, the draft, the sweep's drafts, and says what it needs."""
    preset = next((p for p in presets.PAIR_PRESETS if p.key == key), None)
    if preset is None:
        return {}
    where = ("Bundled: works offline." if preset.bundled else
             "Fetched once (without a model hub), offline afterwards." if preset.fetched else
             "Downloaded from the Hugging Face Hub on first use.")
    return {"target": preset.target, "draft": preset.drafts[0], "sweep_drafts": list(preset.drafts),
            "preset_note": f"{preset.note} About {preset.approx_memory_gb:g} GB of weights. {where}"}


def _model_controls(c: dict) -> None:
    choices = presets.all_model_choices()
    drafts = [AUTO] + [n for n in choices if n not in (presets.DEFAULT_TARGET, AUTO)]
    c["preset"] = gr.Dropdown([(p.label, p.key) for p in presets.PAIR_PRESETS], value=presets.PAIR_PRESETS[0].key,
                              label="Pair preset")
    c["preset_note"] = gr.Markdown(presets.PAIR_PRESETS[0].note)
    c["target"] = gr.Dropdown(choices, value=presets.DEFAULT_TARGET, label="Target", allow_custom_value=True)
    c["draft"] = gr.Dropdown(drafts, value=AUTO, label="Draft", allow_custom_value=True,
                             info="auto: the drafter and K predicted fastest here (K is its largest), "
                                  "speculation off where it does not pay")
    with gr.Accordion("Other model (name or path)", open=False):
        c["target_custom"] = gr.Textbox("", label="Target: Hub id or local folder",
                                        placeholder="overrides the dropdown")
        c["draft_custom"] = gr.Textbox("", label="Draft: Hub id or local folder", placeholder="overrides the dropdown")


def _decoding_controls(c: dict) -> None:
    c["k"] = gr.Slider(1, 16, value=4, step=1, label="K (draft tokens per step)")
    c["temperature"] = gr.Slider(0, 2, value=0.0, step=0.05, label="Temperature (0 = greedy)")
    c["top_p"] = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="Top-p (1 = off)")
    c["top_k"] = gr.Slider(0, 200, value=0, step=1, label="Top-k (0 = off)")
    c["max_new_tokens"] = gr.Slider(1, 512, value=64, step=1, label="Max new tokens")
    c["seed"] = gr.Number(value=0, precision=0, minimum=0, maximum=2**32 - 1, label="Seed")
    c["k_schedule"] = gr.Dropdown(list(SCHEDULES), value="constant", label="K schedule (K above is the largest)",
                                  info=f"constant · heuristic (+2 / −1) · confidence (draft stops below {CONFIDENCE_THRESHOLD}) · "
                                       "optimal (from measured α and costs) · auto (optimal, and speculation off where "
                                       "it does not pay; the auto draft always runs it)")
    c["chat"] = gr.Checkbox(value=True, label="Chat format (wrap the prompt in the target's chat template)")


def _prompt_controls(c: dict) -> None:
    c["prompt"] = gr.Textbox(label="Prompt", lines=4, value=EXAMPLES[0][0], elem_id="prompt")
    with gr.Row():
        c["clean"] = gr.Checkbox(value=True, label="Clean up whitespace in the prompt (collapse stray spaces/tabs)")
        c["cleanup"] = gr.Markdown(elem_id="cleanup-note", label="Whitespace clean-up", show_label=False)
    gr.Examples(EXAMPLES, [c["prompt"], c["k"], c["temperature"], c["seed"], c["max_new_tokens"]],
                label="Examples (fixed seeds; the chat ones are for SmolLM2, the others for the lab family)",
                example_labels=["chat · explain (prose)", "chat · write a function (code)",
                                "chat · rewrite (copying)",
                    "code · fibonacci · greedy", "code · os.walk · greedy K=6", "prose · T=0.7", "prose · T=1.0"])


def build_app(lab: Lab | None = None) -> gr.Blocks:
    """The whole app; `lab` binds the callbacks to an engine (default: the real one)."""
    lab = lab or Lab()
    c: dict = {}
    with gr.Blocks(title="SpecDec Lab") as demo:
        session = gr.State(Session())
        c["run_id"] = gr.Textbox("", visible=False, label="Run id")  # a slot for the ids RUN_JS / STOP_JS send
        with gr.Sidebar(label="Models & decoding", width=330):
            vllm_engine.build_engine_controls(c)
            _model_controls(c)
            _decoding_controls(c)
        gr.Markdown(INTRO)
        _prompt_controls(c)
        tour.build_tour(c)
        with gr.Tabs(elem_id="tabs") as c["tabs"]:
            with gr.Tab("Generate", id="generate"):
                generate_tab.build(c)
            with gr.Tab("Race", id="race"):
                race_tab.build(c)
            with gr.Tab("Sweep", id="sweep"):
                sweep_tab.build(c)
            with gr.Tab("Is it exact?", id="lossless"):
                lossless_tab.build(c)
            with gr.Tab("Why this speedup?", id="cost"):
                cost_tab.build(c)
            with gr.Tab("How it works", id="theory"):
                gr.Markdown(THEORY)
                gr.Markdown(families_markdown(), elem_id="drafter-families")
                gr.Markdown(vllm_engine.HOW_IT_WORKS, elem_id="vllm-how")
                c["theory_fit"] = gr.HTML(THEORY_FIT_EMPTY, elem_id="theory-fit", label="Theory vs measured",
                                          show_label=False)
        settings = generate_tab.wire(lab, c, session)
        vllm_engine.wire_engine_controls(on, c, session)
        race_tab.wire(lab, c, session, settings)
        sweep_tab.wire(lab, c, session)
        on(c["preset"].input, pick_preset, [c["preset"]], pick(c, "target", "draft", "sweep_drafts", "preset_note"),
           api_visibility="private")
        lossless_tab.wire(lab, c, session, settings)
        cost_tab.wire(lab, c, session)
        tour.wire_tour(c, session)
        report.add_svg_buttons(c)
        c["preload_timer"] = gr.Timer(1.0)  # the start-up fetch and preload report in the status line
        on(c["preload_timer"].tick, preload_update, [session], pick(c, "status", "target", "draft", timer="preload_timer"),
           api_visibility="private", concurrency_limit=None)
    demo.queue(default_concurrency_limit=1)
    return demo


LAUNCH_KWARGS = {"css": CSS, "theme": gr.themes.Soft(), "footer_links": ["api", "gradio"]}
THEORY_FIT_EMPTY = ('<div class="theory-fit">Run a sweep: both forms are then compared with your measured points '
                    'here.</div>')

THEORY = r"""
### The algorithm (Leviathan et al. 2023; Chen et al. 2023)
1. The draft proposes K tokens x₁…x_K autoregressively, with probabilities q(x).
2. The target scores all K+1 positions in **one** forward pass, giving p(x).
3. Each drafted token is accepted with probability **min(1, p(x)/q(x))** (a uniform draw u decides);
   at the first rejection the target samples a **resampled** token from the residual **norm(max(0, p − q))**.
   If all K are accepted, it adds a **bonus** token from p at position K+1.
4. Greedy decoding (temperature 0) accepts a draft token exactly when it is the target's argmax.

The output is distributed exactly as if the target had decoded alone: only the speed changes.

### Two acceptance figures (each labelled wherever it appears)
* **acceptance rate** = accepted / **drafted** tokens (the tokens discarded unchecked after a rejection
  count as drafted): what the cards and tables call acceptance rate (vLLM's "draft acceptance rate").
* **α** = accepted / **evaluated** drafted tokens: the per-token acceptance probability of the theory below.
  α ≥ acceptance rate; they differ most at large K.

### What to expect
With α, draft length K, c = draft forward time / target-only step time, and
**E = (1 − α^(K+1)) / (1 − α)** expected tokens per target forward (bonus included: vanilla = 1.00):

| form | speedup | assumes |
|---|---|---|
| textbook (Leviathan et al.) | **E / (K·c + 1)** | verifying K+1 tokens costs one plain step (v = 1) |
| measured | **E / (K·c + v(K))** | v(K) = a speculative step's target side (verifying K+1 tokens, bookkeeping) / a target-only step, **measured** |

e.g. α = 0.8, K = 4, c = 0.05 → textbook ≈ 2.8×. On a CPU, or whenever a forward's fixed costs do not
dominate, v(K) > 1 and the textbook form overestimates. The Sweep measures α, c and v(K) on this machine and
draws both forms over the measured speedups; the table below is filled by your last sweep.

### Where the memory goes
Speculative decoding spends memory to save time. On top of the target's weights and KV cache it needs the **draft
weights** (a separate draft model's; an early exit's adapter; Medusa or EAGLE heads' own layers plus their copy of the
target's head rows for the draft vocabulary; nothing for prompt lookup), the **draft KV cache** (the drafter's own
state: a draft model's cache for the whole sequence, the EAGLE head's one-layer cache, Medusa's last feature, and
the heads' rows of the text's own tokens outside their draft vocabulary) and
**verification slots**: the target's cache must hold K drafted positions beyond the run's own tokens. Verifying K+1
tokens at once also makes K+1 rows of activations and logits, which are transient: only the measured peak shows them.
Extra memory = draft weights + draft KV cache + verification slots, counted exactly; the Sweep plots each point's
speedup against it and marks the Pareto front. It matters when the target barely fits: a GPU nearly full with the
target's weights and cache has no room for a second model, while heads or prompt lookup still fit. On a CPU the
measured peak is the process's resident memory, a coarse figure.

### How a speedup is measured
The streamed run is for watching. The speedup is timed separately: speculative and target-only decoding run in
**pairs over the same number of new tokens** (the speculative run stops at max new tokens or end of text; the
target-only run then produces exactly as many tokens, going on past an end-of-text token of its own), the order
alternating within pairs, repeated until the interval is tight or a time budget ends (10 repeats or more; at least 3 for a very slow model). Shown:
the **median** of the per-pair ratios and a **95% interval** for it (distribution-free, from order statistics:
it needs 6 repeats); when the interval contains 1.0 the app says **no measurable difference**. Each
configuration (models, prompt, every setting, device, dtype) is measured once per browser session and reused, so
Generate, Race and the exports show the same figure. Tokens/s is engine time (model calls, sampling, bookkeeping,
prefill), never UI rendering.
"""
