"""The workshop tour above the tabs, laid out and wired: a stepper over the exercises (a button each, Previous / Next,
a progress bar), the question, the learner's prediction beside what they measured, "Reveal answer", "Reset to
defaults" and a printable handout (views/handout.py); and the links that carry a state (wire_links: the page's load
event, the address bar following a tour step, Copy link). The callbacks are callbacks.py's."""
from __future__ import annotations

import tempfile
from functools import partial

from specdec.ui.exercises import EXERCISES
from specdec.ui.links import link_docs
from specdec.ui.request_form import FORM
from specdec.ui.share_link import COPY_JS, SET_URL_JS, copy_link, schema_of
from specdec.ui.tabs.tour import callbacks
from specdec.ui.tour_state import STORE_KEY, STORE_SECRET, TourState, to_store
from specdec.ui.views.handout import write_handout
from specdec.ui.views.lesson import progress_html
from specdec.ui.wiring import on, on_request

import gradio as gr

SWEEP_FIELDS = ("sweep_drafts", "sweep_ks", "sweep_temps", "sweep_tokens")
TOUR_INTRO = ("Eight short exercises, one step at a time. Each step sets up the models and settings for you, opens "
              "the tab it needs and asks a question. Write down your guess, press Run, then **Reveal answer**: it "
              "starts from your own figures. Your guesses and runs stay in this browser after a reload; **Reset to "
              "defaults** puts every setting back and clears them. docs/workshop.md is the teacher's guide.")
BUTTONS_PER_ROW = 4


def build_tour(c: dict) -> None:
    """The tour (above the tabs): the stepper, the question, the prediction beside the measurement, Reveal
    answer and the answer; the tour's state per session and its copy in the browser's storage."""
    c["link_note"] = gr.Markdown("", elem_id="link-note")
    # outside the accordion: a closed accordion does not mount what it holds, and these must work while closed
    c["tour_state"] = gr.State(TourState())
    c["tour_store"] = gr.BrowserState(to_store(TourState()), storage_key=STORE_KEY, secret=STORE_SECRET)
    c["share_query"] = gr.Textbox("", visible=False, label="The page's link parameters")
    with gr.Accordion(f"Workshop tour: {len(EXERCISES)} exercises, about an hour", open=False,
                      elem_id="tour") as c["tour_box"]:
        gr.Markdown(link_docs(TOUR_INTRO), elem_classes=["explain-note"])
        c["tour_progress"] = gr.HTML(progress_html(TourState()), elem_id="tour-progress", label="Tour progress",
                                     show_label=False)
        for first in range(0, len(EXERCISES), BUTTONS_PER_ROW):
            with gr.Row(elem_classes=["tour-steps"]):
                for n, exercise in enumerate(EXERCISES[first:first + BUTTONS_PER_ROW], start=first + 1):
                    c[f"tour_{exercise.key}"] = gr.Button(f"{n} · {exercise.title}", size="sm", min_width=160,
                                                          elem_id=f"tour-{exercise.key}")
        with gr.Row(elem_id="tour-nav"):
            c["tour_prev"] = gr.Button("◀ Previous", size="sm", min_width=110, elem_id="tour-prev")
            c["tour_next"] = gr.Button("Next ▶", size="sm", variant="primary", min_width=110, elem_id="tour-next")
            c["tour_reset"] = gr.Button("Reset to defaults", size="sm", min_width=150, elem_id="tour-reset")
            c["tour_handout"] = gr.DownloadButton(
                "Printable handout", value=str(write_handout(tempfile.mkdtemp(prefix="specdec-"), EXERCISES)),
                size="sm", min_width=150, elem_id="tour-handout")
        c["tour_question"] = gr.Markdown(callbacks.NO_EXERCISE, elem_id="tour-question")
        c["tour_prediction"] = gr.Textbox(label="Your prediction (write it before you press Run)",
                                          lines=1, max_lines=3, submit_btn="Save", elem_id="tour-prediction")
        c["tour_compare"] = gr.HTML("", elem_id="tour-compare", label="Prediction and measurement",
                                    show_label=False)
        c["tour_reveal"] = gr.Button("Reveal answer", size="sm", elem_id="tour-reveal")
        c["tour_answer"] = gr.Markdown("", elem_id="tour-answer")


def reset_values(c: dict) -> dict:
    """Every component a step or a link may change, with the value it started with (for Reset to defaults)."""
    extras = [name for exercise in EXERCISES for name, _ in exercise.extra]
    return {name: c[name].value for name in (*FORM, "preset", *SWEEP_FIELDS, *extras) if name in c}


def wire_tour(c: dict, session) -> None:
    """Binds the stepper, the prediction, Reveal answer and Reset; needs the sidebar, prompt, tabs and Sweep
    components (and records each finished Generate run through its exports)."""
    defaults = reset_values(c)
    lesson = ("tour_progress", *(f"tour_{e.key}" for e in EXERCISES), "tour_compare", "tour_state", "tour_store",
              "tour_handout")
    loaded = (*defaults, "tabs", "tour_box", "tour_question", "tour_answer", "tour_prediction", "share_query",
              "link_note", *lesson)
    outputs = {name: c[name] for name in loaded if name in c}
    # one at a time, in the order they reach the server (the queue is first in, first out per concurrency id): each
    # handler reads and changes the session's TourState in place, and side by side a step button and a Next that
    # reached the server after it could step from the exercise before. Each takes milliseconds, so a class sharing
    # the slot does not wait. (Two presses sent faster than a round trip can still reach the server in either order.)
    inputs, quiet = [session, c["tour_state"]], dict(api_visibility="private", concurrency_limit=1,
                                                      concurrency_id="tour")
    for exercise in EXERCISES:
        on(c[f"tour_{exercise.key}"].click, partial(callbacks.load_exercise, key=exercise.key), inputs, outputs,
           **quiet)
    on(c["tour_prev"].click, partial(callbacks.step, delta=-1), inputs, outputs, **quiet)
    on(c["tour_next"].click, partial(callbacks.step, delta=1), inputs, outputs, **quiet)
    on(c["tour_reset"].click, partial(callbacks.reset, defaults=defaults), inputs, outputs, **quiet)
    on(c["tour_reveal"].click, callbacks.reveal_answer, inputs, {n: outputs[n] for n in ("tour_answer", *lesson)},
       **quiet)
    predicted = {n: outputs[n] for n in lesson}
    for trigger in (c["tour_prediction"].submit, c["tour_prediction"].blur):  # leaving the box (to press Run) saves
        on(trigger, callbacks.save_prediction, [*inputs, c["tour_prediction"]], predicted, **quiet)
    if "exports" in c:  # a finished run (then its measured speedup) writes new exports: the tour records it
        on(c["exports"].change, callbacks.record_run, inputs, predicted, **quiet)
    if "lossless_result" in c:  # each check's result is kept for the "Break the verifier" answer
        on(c["lossless_result"].change, callbacks.record_check, [c["tour_state"], c["lossless_result"]],
           {n: c[n] for n in ("tour_state", "tour_store")}, **quiet)


def wire_links(c: dict, session, load_trigger, examples) -> None:
    """The page's load event, the address bar following a tour step, and Copy link. `examples`: the example
    prompts, in the order the page shows them (a link names one by its number)."""
    schema = schema_of(c, examples)
    quiet = dict(api_visibility="private", concurrency_limit=None)
    names = (*reset_values(c), "tabs", "tour_box", "tour_question", "tour_answer", "tour_prediction",
             "share_query", "link_note", "tour_progress", *(f"tour_{e.key}" for e in EXERCISES), "tour_compare",
             "tour_state", "tour_store", "tour_handout", "target_custom", "draft_custom")
    outputs = {name: c[name] for name in dict.fromkeys(names) if name in c}

    def load(session_value, state, stored, request: gr.Request):
        return callbacks.page_load(session_value, state, stored, schema, request)

    on(load_trigger, load, [session, c["tour_state"], c["tour_store"]], outputs, **quiet)
    c["share_query"].change(None, [c["share_query"]], None, js=SET_URL_JS, api_visibility="private")
    if "share_btn" in c:
        copied = on_request(c["share_btn"].click, lambda _, request, state: copy_link(request, state, schema), c,
                            session, {n: c[n] for n in ("share_query", "share_note", "share_url", "error")},
                            extra=("tour_state",), **quiet)
        copied.then(None, [c["share_query"]], [c["share_url"]], js=COPY_JS, api_visibility="private")
