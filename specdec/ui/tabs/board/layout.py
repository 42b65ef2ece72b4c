"""The Class board tab: every run made on this app, pooled per exercise (or example) and configuration, for a
teacher's projector; while it is the open tab it refreshes itself every few seconds (a page on another tab asks
the server nothing for it: a class of 30 would otherwise poll it 6 times a second). The teacher resets it with the
operator key (SPECDEC_OPERATOR_KEY). The pooling is specdec/serving/class_board.py; what is shared, classroom.py."""
from __future__ import annotations

from specdec.ui.lab import LabCore
from specdec.ui.tabs.board.callbacks import follow_tab, reset, show
from specdec.ui.views.board import board_html
from specdec.ui.wiring import on, pick

import gradio as gr

REFRESH_S = 5.0  # while the tab is open
INTRO = ("**Class board**: every run on this app, pooled per exercise and configuration, so a class compares its "
         "figures at a glance. *Runs*: how many runs pooled; *acceptance rate*: accepted / drafted tokens (mean "
         "over the runs); *tokens per target forward*: bonus included, plain decoding is 1.00; *measured speedup*: "
         "against the target alone, timed on this machine (runs of one configuration share one measurement); "
         "*best K*: the K with the highest median speedup over everyone's sweeps. Runs on your own prompt show "
         "only as numbers, never their text.")


def build(c: dict) -> None:
    gr.Markdown(INTRO, elem_classes=["explain-note"])
    c["board"] = gr.HTML(board_html([]), elem_id="class-board", label="Class board", show_label=False)
    c["board_refresh"] = gr.Button("Refresh now", size="sm", elem_id="board-refresh")
    with gr.Accordion("Teacher: reset the board", open=False, elem_id="board-reset-box"):
        c["board_key"] = gr.Textbox(label="Operator key (SPECDEC_OPERATOR_KEY)", type="password",
                                    elem_id="board-key")
        c["board_reset"] = gr.Button("Reset the board", variant="stop", size="sm", elem_id="board-reset")
        c["board_note"] = gr.Markdown(elem_id="board-note")
    c["board_timer"] = gr.Timer(REFRESH_S, active=False)  # started when the tab opens (follow_tab)


def wire(lab: LabCore, c: dict) -> None:
    """The board's refresh (while its tab is open, and the button) and the teacher's reset."""
    def tab_opened(evt: gr.SelectData) -> dict:  # Gradio finds the event data by this annotation (not via partial)
        return follow_tab(lab, evt)

    on(c["tabs"].select, tab_opened, [], pick(c, "board", "board_timer"), api_visibility="private",
       concurrency_limit=None, show_progress="hidden")
    on(c["board_timer"].tick, lambda: show(lab), [], pick(c, "board"), api_visibility="private",
       concurrency_limit=None, show_progress="hidden")
    on(c["board_refresh"].click, lambda: show(lab), [], pick(c, "board"), api_name="board", concurrency_limit=None)
    on(c["board_reset"].click, lambda key: reset(lab, key), [c["board_key"]], pick(c, "board", "board_note", "board_key"),
       api_name="board_reset", concurrency_limit=None)
