"""The page shell: the sidebar (sidebar.py: models, decoding, the engine last), the prompt, its examples (each sets
the models it is for) and the tour above the tabs, and the tabs (TABS: one line each), each laid out and wired by its
own tabs/<tab>/layout.py (its callbacks in tabs/<tab>/callbacks.py, its renderers in views/). Events bind the plain
callbacks by output name through wiring.py."""
from __future__ import annotations

from specdec.models import presets
from specdec.ui import suffix_sessions
from specdec.ui.controls import add_svg_buttons
from specdec.ui.defaults import default_draft
from specdec.ui.preload import preload_update
from specdec.ui.session import Session
from specdec.ui.sidebar import build_compact_controls, build_sidebar, models_note, pick_preset, wire_compact_controls
from specdec.ui.style import CSS, LOAD_JS, PROJECTOR_FROM_URL_JS, PROJECTOR_JS
from specdec.ui.tabs.board import callbacks as board_callbacks
from specdec.ui.tabs.board import layout as board_tab
from specdec.ui.tabs.cost import layout as cost_tab
from specdec.ui.tabs.generate import layout as generate_tab
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.load import layout as load_tab
from specdec.ui.tabs.lossless import layout as lossless_tab
from specdec.ui.tabs.race import layout as race_tab
from specdec.ui.tabs.sweep import layout as sweep_tab
from specdec.ui.tabs.theory import layout as theory_tab
from specdec.ui.tabs.tour import layout as tour
from specdec.ui.tabs.whatif import layout as whatif_tab
from specdec.ui.tabs.workload import layout as workload_tab
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
# The page's header, one line: the name and what happens, in a sentence (the sketch under Run shows it, the tour and
# "How it works" teach it).
HEADER = """<div id="app-head"><h1>SpecDec Lab</h1><p class="tagline">A small <b>draft</b> model proposes K tokens;
the <b>target</b> checks them in one forward pass and keeps the agreeing prefix plus a token of its own: the output
is exactly the target's, the speedup measured here.</p></div>"""


def _prompt_controls(c: dict) -> None:
    """The prompt, the compact control row a phone shows (sidebar.py), the examples in one row and the whitespace
    clean-up, as little height as each can take: Run and its result come right after (the tabs)."""
    c["prompt"] = gr.Textbox(label="Prompt", lines=2, max_lines=6, value=EXAMPLES[0][0], elem_id="prompt")
    build_compact_controls(c)
    with gr.Row(elem_id="prompt-extras"):
        gr.Examples(EXAMPLES, [c[name] for name in EXAMPLE_FIELDS], label="Examples (each sets its models)",
                    example_labels=EXAMPLE_LABELS, elem_id="examples")
        with gr.Column(scale=0, min_width=200, elem_id="clean-box"):
            c["clean"] = gr.Checkbox(value=True, label="Clean up whitespace (stray spaces, tabs)", container=False,
                                     elem_id="clean")
            c["cleanup"] = gr.Markdown(elem_id="cleanup-note", label="Whitespace clean-up", show_label=False)


# === The tabs, in order: (label, id, builder). A new tab is one line here; its builder lays it out and may wire
# its own events (the shared components are in the dict it gets). =================================================
TABS = [
    ("Generate", "generate", generate_tab.build),
    ("Race", "race", race_tab.build),
    ("Sweep", "sweep", sweep_tab.build),
    ("Is it exact?", "lossless", lossless_tab.build),
    ("Why this speedup?", "cost", cost_tab.build),
    ("How it works", "theory", theory_tab.build),
    ("What if?", "whatif", whatif_tab.build),
    ("Across requests", "workload", workload_tab.build),
    ("Under load", "load", load_tab.build),
    (board_callbacks.TAB_LABEL, "board", board_tab.build),
]


def build_app(lab: Lab | None = None) -> gr.Blocks:
    """The whole app; `lab` binds the callbacks to an engine (default: the real one)."""
    lab = lab or Lab()
    # the app's own prompts: runs on them are shared and named on the class board (classroom.py); others are private
    lab.classroom.publish(board_callbacks.app_prompts([example[0] for example in EXAMPLES]))
    suffix_sessions.install()  # the suffix drafter's store: one per browser session on a public deployment
    c: dict = {}
    with gr.Blocks(title="SpecDec Lab") as demo:
        session = gr.State(Session())
        c["run_id"] = gr.Textbox("", visible=False, label="Run id")  # a slot for the ids RUN_JS / STOP_JS send
        with gr.Sidebar(label="Models & decoding", width=330):
            build_sidebar(c)
        gr.HTML(HEADER, elem_id="app-head-box", padding=False)
        _prompt_controls(c)
        tour.build_tour(c)
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap") as c["tabs"]:
            for label, tab_id, build_tab in TABS:
                with gr.Tab(label, id=tab_id):
                    build_tab(c)
        generate_tab.wire(lab, c, session)
        vllm_engine.wire_engine_controls(on, c, session)
        race_tab.wire(lab, c, session)
        sweep_tab.wire(lab, c, session)
        on(c["preset"].input, pick_preset, [c["preset"]], pick(c, "target", "draft"), api_visibility="private")
        for trigger in (c["target"].change, c["draft"].change):  # the notes follow the models, however chosen
            on(trigger, models_note, [c["target"], c["draft"]], pick(c, "preset_note", "preset_details", "draft"),
               api_visibility="private", concurrency_limit=None)
        lossless_tab.wire(lab, c, session)
        cost_tab.wire(lab, c, session)
        whatif_tab.wire(lab, c, session)
        board_tab.wire(lab, c)
        workload_tab.wire(lab, c, session)
        load_tab.wire(lab, c, session)
        tour.wire_tour(c, session)
        tour.wire_links(c, session, demo.load, [example[0] for example in EXAMPLES])  # links that carry a state
        generate_tab.wire_restore(lab, c, session, demo.load)  # the last run this browser kept
        c["projector"].change(None, [c["projector"]], [c["projector"]], js=PROJECTOR_JS, api_visibility="private")
        demo.load(None, None, [c["projector"]], js=PROJECTOR_FROM_URL_JS, api_visibility="private")
        wire_compact_controls(c)
        add_svg_buttons(c)
        c["preload_timer"] = gr.Timer(1.0)  # the start-up fetch and preload report in the status line
        on(c["preload_timer"].tick, preload_update, [session], pick(c, "status", "target", "draft", "k",
                                                                    timer="preload_timer"),
           api_visibility="private", concurrency_limit=None)
    demo.queue(default_concurrency_limit=1)
    return demo


LAUNCH_KWARGS = {"css": CSS, "js": LOAD_JS, "theme": gr.themes.Soft(), "footer_links": ["api", "gradio"]}
