"""The Class board tab: every run made on this app, pooled per exercise (or example) and configuration, for a
teacher's projector; while it is the open tab it refreshes itself every few seconds (a page on another tab asks
the server nothing for it: a class of 30 would otherwise poll it 6 times a second). The teacher resets it with the
operator key (SPECDEC_OPERATOR_KEY). The pooling is specdec/serving/class_board.py; what is shared, classroom.py."""
from __future__ import annotations

import hmac
import time
from html import escape

from specdec import config
from specdec.serving.class_board import BoardRow
from specdec.ui.callbacks import Lab
from specdec.ui.tabs.exercises import EXERCISES, exercise_number
from specdec.ui.wiring import on, pick

import gradio as gr

TAB_LABEL = "Class board"
REFRESH_S = 5.0  # while the tab is open
INTRO = ("**Class board**: every run on this app, pooled per exercise and configuration, so a class compares its "
         "figures at a glance. *Runs*: how many runs pooled; *acceptance rate*: accepted / drafted tokens (mean "
         "over the runs); *tokens per target forward*: bonus included, plain decoding is 1.00; *measured speedup*: "
         "against the target alone, timed on this machine (runs of one configuration share one measurement); "
         "*best K*: the K with the highest median speedup over everyone's sweeps. Runs on your own prompt show "
         "only as numbers, never their text.")
STYLE = ("<style>.class-board{overflow-x:auto}.class-board table{border-collapse:collapse;width:100%;"
         "font-size:1.05rem}.class-board th,.class-board td{padding:.35rem .6rem;border-bottom:1px solid #ccc;"
         "text-align:left}.class-board td.num{text-align:right;font-variant-numeric:tabular-nums}"
         ".class-board .empty{padding:1rem;font-size:1.1rem}</style>")
COLUMNS = ("Exercise or example", "Configuration", "Runs", "Acceptance rate", "Tokens per target forward",
           "Measured speedup", "Best K (pooled sweeps)")


def app_prompts(examples: list[str]) -> dict[str, str]:
    """The app's own prompts and their names on the board: the tour's exercises, then the examples."""
    named = {e.prompt: f"Exercise {exercise_number(e)}: {e.title}" for e in EXERCISES}
    for i, prompt in enumerate(examples, 1):
        first = " ".join(prompt.split())
        named.setdefault(prompt, f"Example {i}: {first[:40]}{'…' if len(first) > 40 else ''}")
    return named


def _num(x, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _speedup(row: BoardRow) -> str:
    if row.speedup is None:
        return "not measured yet"
    return f"{row.speedup:.2f}× ({row.measured_runs} measured)"


def _best_k(row: BoardRow) -> str:
    if row.best_k is None:
        return "–"
    return f"K={row.best_k}: {row.best_k_speedup:.2f}× ({row.sweeps} sweep{'s' if row.sweeps != 1 else ''})"


def board_html(rows: list[BoardRow], reset_at: float | None = None) -> str:
    """The board as a table (numbers right-aligned, every figure with its meaning in the header)."""
    since = (f" Since the teacher's reset at {time.strftime('%H:%M:%S UTC', time.gmtime(reset_at))}."
             if reset_at else "")
    if not rows:
        return (f'{STYLE}<div class="class-board" id="class-board-table"><div class="empty">No runs yet on this '
                f"app. Press Run on an exercise: every run appears here.{since}</div></div>")
    total = sum(r.runs for r in rows)
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = "".join(
        f"<tr><td>{escape(r.label)}</td><td>{escape(r.config)}</td><td class='num'>{r.runs}</td>"
        f"<td class='num'>{_num(r.acceptance_rate, '.0%')}</td><td class='num'>{_num(r.tokens_per_forward, '.2f')}</td>"
        f"<td class='num'>{_speedup(r)}</td><td>{_best_k(r)}</td></tr>" for r in rows)
    return (f'{STYLE}<div class="class-board" id="class-board-table"><p>{total} run{"s" if total != 1 else ""} '
            f"pooled on this app.{since}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


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


def show(lab: Lab) -> dict:
    board = lab.classroom.board
    return {"board": board_html(board.rows(), board.reset_at)}


def follow_tab(lab: Lab, evt: gr.SelectData) -> dict:
    """A tab was opened: the board's, shown now and refreshed every REFRESH_S; another, the refreshing stops."""
    opened = evt.value == TAB_LABEL
    return {"board_timer": gr.Timer(active=opened), **(show(lab) if opened else {})}


def reset(lab: Lab, key: str | None) -> dict:
    """Resets the board when `key` is the operator's; otherwise says why not, and changes nothing."""
    expected = config.get("SPECDEC_OPERATOR_KEY") or ""
    if not expected:
        return {"board_note": "Resetting is off: the operator sets SPECDEC_OPERATOR_KEY to allow it."}
    if not hmac.compare_digest(str(key or "").encode(), expected.encode()):
        return {"board_note": "That is not the operator key: the board was not reset."}
    lab.classroom.board.reset()
    return {**show(lab), "board_note": "The board was reset.", "board_key": ""}


def wire(lab: Lab, c: dict) -> None:
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
