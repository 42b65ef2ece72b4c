"""The Class board tab's callbacks: the app's own prompts and their names on the board, the board shown (when its tab
opens, on each tick while it is open, and on Refresh), and the teacher's reset with the operator key
(SPECDEC_OPERATOR_KEY). Plain functions returning {output name: value} dicts (views/board.py draws the table)."""
from __future__ import annotations

import hmac

from specdec import config
from specdec.ui.exercises import EXERCISES, exercise_number
from specdec.ui.lab import LabCore
from specdec.ui.views.board import board_html

import gradio as gr

TAB_LABEL = "Class board"  # the tab's label: opening it starts the refreshing (follow_tab)


def app_prompts(examples: list[str]) -> dict[str, str]:
    """The app's own prompts and their names on the board: the tour's exercises, then the examples."""
    named = {e.prompt: f"Exercise {exercise_number(e)}: {e.title}" for e in EXERCISES}
    for i, prompt in enumerate(examples, 1):
        first = " ".join(prompt.split())
        named.setdefault(prompt, f"Example {i}: {first[:40]}{'…' if len(first) > 40 else ''}")
    return named


def show(lab: LabCore) -> dict:
    board = lab.classroom.board
    return {"board": board_html(board.rows(), board.reset_at)}


def follow_tab(lab: LabCore, evt: gr.SelectData) -> dict:
    """A tab was opened: the board's, shown now and refreshed every REFRESH_S; another, the refreshing stops."""
    opened = evt.value == TAB_LABEL
    return {"board_timer": gr.Timer(active=opened), **(show(lab) if opened else {})}


def reset(lab: LabCore, key: str | None) -> dict:
    """Resets the board when `key` is the operator's; otherwise says why not, and changes nothing."""
    expected = config.get("SPECDEC_OPERATOR_KEY") or ""
    if not expected:
        return {"board_note": "Resetting is off: the operator sets SPECDEC_OPERATOR_KEY to allow it."}
    if not hmac.compare_digest(str(key or "").encode(), expected.encode()):
        return {"board_note": "That is not the operator key: the board was not reset."}
    lab.classroom.board.reset()
    return {**show(lab), "board_note": "The board was reset.", "board_key": ""}
