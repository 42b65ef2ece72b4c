"""The page shell: the sidebar (sidebar.py: models, decoding, the engine last), the prompt, its examples (each sets
the models it is for) and the tour above the tabs, and the tabs (TABS: one line each), each built and wired by its
own module (generate_tab, race_tab, sweep_tab, lossless_tab, cost_tab; How it works here). Events bind the plain
callbacks by output name through wiring.py."""
from __future__ import annotations

from specdec.drafters.families import families_markdown
from specdec.models import presets
from specdec.ui import suffix_sessions
from specdec.ui.callbacks import Lab
from specdec.ui.defaults import default_draft
from specdec.ui.links import link_docs
from specdec.ui.preload import preload_update
from specdec.ui.session import Session
from specdec.ui.share_link import wire_links
from specdec.ui.sidebar import build_sidebar, pick_preset
from specdec.ui.style import CSS, LOAD_JS, PROJECTOR_JS
from specdec.ui.tabs import board as board_tab
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
from specdec.ui.tabs import whatif as whatif_tab
from specdec.ui.tabs import workload as workload_tab
from specdec.ui.vllm import engine as vllm_engine
from specdec.ui.wiring import on, pick

import gradio as gr

DEFAULT = default_draft()
SMOL, LAB_PAIR = (presets.DEFAULT_TARGET, DEFAULT.name), (presets.LAB_TARGET, presets.LAB_DRAFT)
EXAMPLES = [  # prompt, target, draft, chat, K, temperature, seed, max new tokens: each sets the models it is for
    ["Explain photosynthesis in simple terms.", *SMOL, True, DEFAULT.k, 0.0, 0, 96],
    ["Write a Python function that checks whether a string is a palindrome.", *SMOL, True, DEFAULT.k, 0.0, 0, 128],
    ["Rewrite this paragraph in plain English, keeping its meaning:\n\nThe committee, having deliberated at "
     "considerable length on the matter of the budget, ultimately resolved to approve the proposal, subject to "
     "the condition that all expenditures be reported to the board on a quarterly basis.", *SMOL, True, DEFAULT.k,
     0.0, 0, 96],
    ["def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n", *LAB_PAIR, False, 4, 0.0, 0, 64],
    ["import os\n\n\ndef list_python_files(folder):\n", *LAB_PAIR, False, 6, 0.0, 0, 64],
    ["The os module provides a portable way of using", *LAB_PAIR, False, 4, 0.7, 1, 64],
    ["A list comprehension is", *LAB_PAIR, False, 3, 1.0, 2, 48],
]
EXAMPLE_FIELDS = ("prompt", "target", "draft", "chat", "k", "temperature", "seed", "max_new_tokens")
EXAMPLE_LABELS = ["chat · explain (prose)", "chat · write a function (code)", "chat · rewrite (copying)",
                  "code · fibonacci · greedy", "code · os.walk · greedy K=6", "prose · T=0.7", "prose · T=1.0"]
INTRO = """# SpecDec Lab
A small **draft** model proposes K tokens; the **target** checks them all in one forward pass and keeps
the longest agreeing prefix, then adds one token of its own. Modified rejection sampling keeps the output
exactly distributed as the target's. Watch every token's fate, inspect the probabilities behind it, and
measure the speedup against a real target-only run on this machine."""


def _prompt_controls(c: dict) -> None:
    c["prompt"] = gr.Textbox(label="Prompt", lines=4, value=EXAMPLES[0][0], elem_id="prompt")
    with gr.Row():
        c["clean"] = gr.Checkbox(value=True, label="Clean up whitespace in the prompt (collapse stray spaces/tabs)")
        c["cleanup"] = gr.Markdown(elem_id="cleanup-note", label="Whitespace clean-up", show_label=False)
    gr.Examples(EXAMPLES, [c[name] for name in EXAMPLE_FIELDS],
                label="Examples (fixed seeds; each sets its models: SmolLM2 in chat format, or the lab family)",
                example_labels=EXAMPLE_LABELS)


def build_theory(c: dict) -> None:
    """How it works: the algorithm, the drafter families (their `<name>` placeholders shown, not read as HTML
    tags), the same views on vLLM, and the last sweep's fit; docs/*.md references link to SPECDEC_DOCS_URL."""
    gr.Markdown(link_docs(THEORY))
    gr.Markdown(link_docs(families_markdown().replace("<", "&lt;")), elem_id="drafter-families")
    gr.Markdown(link_docs(vllm_engine.HOW_IT_WORKS), elem_id="vllm-how")
    c["theory_fit"] = gr.HTML(THEORY_FIT_EMPTY, elem_id="theory-fit", label="Theory vs measured", show_label=False)


# === The tabs, in order: (label, id, builder). A new tab is one line here; its builder lays it out and may wire
# its own events (the shared components are in the dict it gets). =================================================
TABS = [
    ("Generate", "generate", generate_tab.build),
    ("Race", "race", race_tab.build),
    ("Sweep", "sweep", sweep_tab.build),
    ("Is it exact?", "lossless", lossless_tab.build),
    ("Why this speedup?", "cost", cost_tab.build),
    ("How it works", "theory", build_theory),
    # the tabs below fold into the tab bar's "…" menu on a narrow screen: the lesson's tabs above stay in view
    ("What if?", "whatif", whatif_tab.build),
    ("Across requests", "workload", workload_tab.build),
    (board_tab.TAB_LABEL, "board", board_tab.build),
]


def build_app(lab: Lab | None = None) -> gr.Blocks:
    """The whole app; `lab` binds the callbacks to an engine (default: the real one)."""
    lab = lab or Lab()
    # the app's own prompts: runs on them are shared and named on the class board (classroom.py); others are private
    lab.classroom.publish(board_tab.app_prompts([example[0] for example in EXAMPLES]))
    suffix_sessions.install()  # the suffix drafter's store: one per browser session on a public deployment
    c: dict = {}
    with gr.Blocks(title="SpecDec Lab") as demo:
        session = gr.State(Session())
        c["run_id"] = gr.Textbox("", visible=False, label="Run id")  # a slot for the ids RUN_JS / STOP_JS send
        with gr.Sidebar(label="Models & decoding", width=330):
            build_sidebar(c)
        gr.Markdown(INTRO)
        _prompt_controls(c)
        tour.build_tour(c)
        with gr.Tabs(elem_id="tabs") as c["tabs"]:
            for label, tab_id, build_tab in TABS:
                with gr.Tab(label, id=tab_id):
                    build_tab(c)
        settings = generate_tab.wire(lab, c, session)
        vllm_engine.wire_engine_controls(on, c, session)
        race_tab.wire(lab, c, session, settings)
        sweep_tab.wire(lab, c, session)
        on(c["preset"].input, pick_preset, [c["preset"]], pick(c, "target", "draft", "sweep_drafts", "preset_note", "preset_details"),
           api_visibility="private")
        lossless_tab.wire(lab, c, session, settings)
        cost_tab.wire(lab, c, session)
        whatif_tab.wire(lab, c, session)
        board_tab.wire(lab, c)
        workload_tab.wire(lab, c, session)
        tour.wire_tour(c, session)
        wire_links(c, session, demo.load, [example[0] for example in EXAMPLES])  # links that carry a state
        c["projector"].change(None, [c["projector"]], [c["projector"]], js=PROJECTOR_JS, api_visibility="private")
        report.add_svg_buttons(c)
        c["preload_timer"] = gr.Timer(1.0)  # the start-up fetch and preload report in the status line
        on(c["preload_timer"].tick, preload_update, [session], pick(c, "status", "target", "draft", timer="preload_timer"),
           api_visibility="private", concurrency_limit=None)
    demo.queue(default_concurrency_limit=1)
    return demo


LAUNCH_KWARGS = {"css": CSS, "js": LOAD_JS, "theme": gr.themes.Soft(), "footer_links": ["api", "gradio"]}
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
configuration (models, drafter, K and its schedule, warping, seed, max new tokens, prompt, device, dtype) is
measured **once per app**, shared by everyone who runs it: a request for a configuration being measured waits for
that measurement instead of starting a second, and the figure says how many runs it served and when it was
measured. On your own prompt (not one of the app's examples or exercises) the measurement is yours alone, and
nobody else sees it. Generate, Race and the exports show the same figure. No timed pair overlaps other work:
each pair has the machine to itself, and other users' streamed steps run between pairs. Identical deterministic
runs (greedy, or sampled with the same seed) requested at the same time are made once and streamed to each of
them. Tokens/s is engine time (model calls, sampling, bookkeeping, prefill), never UI rendering or waiting.
"""
