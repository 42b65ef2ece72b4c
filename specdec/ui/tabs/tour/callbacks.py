"""The workshop tour as a lesson: a stepper over the exercises (exercises.py; a button each, Previous / Next, a
progress bar), each exercise's learning goal and question, the learner's prediction written before Run and shown
beside what they measured, a "Reveal answer" button that quotes the learner's own figures before the general
explanation, "Reset to defaults" and a printable handout (views/handout.py).

Callbacks are plain functions returning {component name: value} dicts, with the names of layout.py's
component dict; a TourState (tour_state.py; per browser session in gr.State, and a copy in the browser's
storage) remembers which exercise is loaded, the predictions and the figures recorded for each, so a later
answer can compare with an earlier exercise, even after a page reload.
"""
from __future__ import annotations

import tempfile
from functools import partial

from specdec.models import presets
from specdec.models.prompt_clean import clean_prompt
from specdec.ui.callbacks import make_settings
from specdec.ui.links import link_docs
from specdec.ui.session import RunView, Session
from specdec.ui.tabs.exercises import EXERCISES, Exercise, exercise_number, find_exercise
from specdec.ui.tabs.sweep_run import best_summary
from specdec.ui.tabs.tour_state import (
    STORE_KEY,
    STORE_SECRET,
    Prediction,
    TourState,
    describe_observation,
    observation_of,
    to_store,
)
from specdec.ui.url_state import FIELDS, exercise_values
from specdec.ui.views.handout import write_handout
from specdec.ui.views.lesson import compare_html, progress_html
from specdec.ui.wiring import on

import gradio as gr

TAB_LABELS = {"generate": "Generate", "race": "Race", "sweep": "Sweep", "lossless": "Is it exact?",
              "cost": "Why this speedup?", "theory": "How it works"}  # tab id -> its label in layout.py
# the components every exercise sets (and a link carries): the prompt, the typed names (cleared) and the settings
SETTINGS = ("prompt", "target_custom", "draft_custom", *(f.name for f in FIELDS))
SWEEP_FIELDS = ("sweep_drafts", "sweep_ks", "sweep_temps", "sweep_tokens")
COMPARED = ("target", "draft", "k", "k_schedule", "temperature", "top_p", "top_k", "seed", "max_new_tokens")
TOUR_INTRO = ("Eight short exercises, one step at a time. Each step sets up the models and settings for you, opens "
              "the tab it needs and asks a question. Write down your guess, press Run, then **Reveal answer**: it "
              "starts from your own figures. Your guesses and runs stay in this browser after a reload; **Reset to "
              "defaults** puts every setting back and clears them. docs/workshop.md is the teacher's guide.")
BUTTONS_PER_ROW = 4
NO_EXERCISE = "*Press **Next** to start, or pick an exercise: its button loads the settings and asks the question.*"
LAST_STEP = "*That was the last exercise. The handout (button above) has every question, for the class's notes.*"


def run_setup(exercise: Exercise) -> dict:
    """The exercise's settings in RunResult terms (names, and DecodeSettings' fields)."""
    settings = make_settings(exercise.k, exercise.temperature, exercise.top_p, exercise.top_k,
                             exercise.max_new_tokens, exercise.seed, exercise.k_schedule)
    return {"target": exercise.target, "draft": exercise.draft, **{f: getattr(settings, f) for f in COMPARED[2:]}}


def mismatches(exercise: Exercise, view: RunView) -> list[str]:
    """How the run differs from the exercise ([] when it is the exercise's run)."""
    result = view.result
    actual = {"target": result.target_name, "draft": result.draft_name,
              **{f: getattr(result.settings, f) for f in COMPARED[2:]}}
    differences = [f"{name.replace('_', ' ')} {actual[name]} (exercise: {wanted})"
                   for name, wanted in run_setup(exercise).items() if actual[name] != wanted]
    if view.prompt not in (exercise.prompt, clean_prompt(exercise.prompt).text):
        differences.insert(0, "another prompt")
    return differences


def remember_run(tour: TourState, session: Session) -> bool:
    """Records the last run under the loaded exercise when it is that exercise's run (True when it did)."""
    exercise, view = find_exercise(tour.current), session.last_run
    if exercise is None or exercise.evidence != "run" or view is None or view.result is None:
        return False
    if mismatches(exercise, view):
        return False
    tour.observations[exercise.key] = observation_of(view)
    return True


# --- the answer: the learner's figures, then the explanation --------------------------------------------

def run_evidence(exercise: Exercise, session: Session, tour: TourState) -> str:
    view = session.last_run
    if view is None or view.result is None:
        return ("**You have not run anything yet.** Press **Run** in the Generate tab, then reveal again: the answer "
                "starts with your own figures.")
    lines = [f"**Your last run** (draft {view.result.draft_name}, K = {view.result.settings.k}, "
             f"T = {view.result.settings.temperature:g}): {describe_observation(observation_of(view))}."]
    differences = mismatches(exercise, view)
    if differences:
        lines.append(f"*That is not this exercise's run ({'; '.join(differences)}): the figures are that run's. "
                     "Load the exercise again and press Run to measure its own.*")
    for key in exercise.compare:
        other = find_exercise(key)
        name = f"exercise {exercise_number(other)} ({other.title})"
        obs = tour.observations.get(key)
        lines.append(f"In {name} you measured {describe_observation(obs)}." if obs else
                     f"No run of {name} is recorded yet: load it, press Run, and come back to compare.")
    return "\n\n".join(lines)


def sweep_evidence(exercise: Exercise, session: Session, tour: TourState) -> str:
    rows = session.sweep_rows
    if not rows:
        return "**No sweep yet.** Press **Run sweep** in the Sweep tab, then reveal again."
    wanted = set(exercise.sweep.drafts) if exercise.sweep else set()
    other = "" if {r.draft for r in rows} <= wanted else " (not this exercise's drafts: these are that sweep's)"
    return f"**Your last sweep**{other}:\n\n{best_summary(rows)}"


def lossless_evidence(exercise: Exercise, session: Session, tour: TourState) -> str:
    if not tour.checks:
        return ("**No check recorded yet.** Press **Check** in the Is it exact? tab (real verifier, then a broken "
                "one), then reveal again.")
    lines = [f"- {verifier}: {text}" for verifier, text in tour.checks.items()]
    return "**Your checks** (sampling test, each verifier's last):\n\n" + "\n".join(lines)


def record_check(tour: TourState, result) -> dict:
    """The Is it exact? tab's result (its JSON) -> one line per verifier, kept for the answer."""
    sampling = result.get("sampling") if isinstance(result, dict) else None
    if sampling:
        tour.checks[sampling["verifier"]] = f"{sampling['draws']:,} draws per side: {sampling['verdict']}"
    return {"tour_state": tour, "tour_store": to_store(tour)}


EVIDENCE = {"run": run_evidence, "sweep": sweep_evidence, "lossless": lossless_evidence}


def compose_answer(exercise: Exercise, session: Session, tour: TourState) -> str:
    return f"{EVIDENCE[exercise.evidence](exercise, session, tour)}\n\n**Why.** {exercise.explanation}"


# --- the stepper: where the learner is, their prediction beside their measurement -----------------------

def step_buttons(tour: TourState) -> dict:
    """Each exercise's button: the current one stands out, a done one carries a tick."""
    return {f"tour_{e.key}": gr.update(value=f"{'✓ ' if tour.done(e.key) else ''}{n} · {e.title}",
                                       variant="primary" if e.key == tour.current else "secondary")
            for n, e in enumerate(EXERCISES, start=1)}


def measured_text(exercise: Exercise, session: Session, tour: TourState) -> str:
    """What the learner measured for this exercise, in one sentence (Markdown bold)."""
    if exercise.evidence == "run":
        obs = tour.observations.get(exercise.key)
        return describe_observation(obs) if obs else "Nothing yet: press **Run** (Generate tab)."
    if exercise.evidence == "sweep":
        best = next((r for r in session.sweep_rows if r.best_measured), None)
        return f"best measured K = **{best.k}** in your last sweep" if best else "Nothing yet: press **Run sweep**."
    if tour.checks:
        return "; ".join(f"{verifier}: {text}" for verifier, text in tour.checks.items())
    return "Nothing yet: press **Check** (Is it exact? tab)."


def lesson_view(session: Session, tour: TourState) -> dict:
    """The stepper's progress and buttons, prediction beside measurement, and the browser's copy of it all."""
    exercise = find_exercise(tour.current)
    measured = measured_text(exercise, session, tour) if exercise else ""
    return {"tour_progress": progress_html(tour), **step_buttons(tour),
            "tour_compare": compare_html(exercise, tour, measured), "tour_state": tour, "tour_store": to_store(tour)}


def describe_settings(exercise: Exercise) -> str:
    warpers = "".join([f", top-p {exercise.top_p:g}" if exercise.top_p < 1 else "",
                       f", top-k {exercise.top_k}" if exercise.top_k > 0 else ""])
    return (f"Loaded: target `{exercise.target}`, draft `{exercise.draft}`, K = {exercise.k} ({exercise.k_schedule}), "
            f"T = {exercise.temperature:g}{warpers}, seed {exercise.seed}, {exercise.max_new_tokens} new tokens, "
            f"chat format {'on' if exercise.chat else 'off'}.")


def render_question(exercise: Exercise) -> str:
    tab = TAB_LABELS.get(exercise.tab, exercise.tab)
    return (f"**Exercise {exercise_number(exercise)} of {len(EXERCISES)}: {exercise.title}** · about "
            f"{exercise.minutes} minutes · {tab} tab\n\n**Goal:** {exercise.goal}\n\n{exercise.question}\n\n"
            f"*{describe_settings(exercise)}*")


def preset_for(target: str) -> dict:
    """The pair dropdown's value naming `target`'s pair ({} when no preset has it; .input does not fire on this)."""
    preset = next((p.key for p in presets.PAIR_PRESETS if p.target == target), None)
    return {} if preset is None else {"preset": preset}


def exercise_settings(exercise: Exercise) -> dict:
    """{component name: value} for the sidebar, the prompt and (when the exercise has them) the Sweep's fields;
    the "name or path" fields are cleared, as they would override the dropdowns."""
    update = {**exercise_values(exercise), "target_custom": "", "draft_custom": "", **preset_for(exercise.target)}
    if exercise.sweep is not None:
        s = exercise.sweep
        update.update(sweep_drafts=list(s.drafts), sweep_ks=s.ks, sweep_temps=s.temperatures, sweep_tokens=s.tokens)
    return {**update, **dict(exercise.extra)}


def load_exercise(session: Session, tour: TourState, key: str) -> dict:
    """An exercise's button: records the run of the exercise being left, loads the new one's settings, opens
    its tab, shows its goal, question and the learner's prediction, hides the previous answer and puts the
    exercise in the page's address (share_query)."""
    exercise = find_exercise(key)
    if exercise is None:
        return {"tour_question": f"Unknown exercise {key!r}."}
    remember_run(tour, session)
    tour.current = exercise.key
    prediction = tour.predictions.get(exercise.key)
    return {**exercise_settings(exercise), "tabs": gr.update(selected=exercise.tab),
            "tour_question": render_question(exercise), "tour_answer": "", "tour_box": gr.update(open=True),
            "tour_prediction": gr.update(value=prediction.text if prediction else "",
                                         placeholder=exercise.predict),
            "share_query": f"exercise={exercise.key}", **lesson_view(session, tour)}


def step(session: Session, tour: TourState, delta: int) -> dict:
    """Previous / Next: the exercise `delta` steps from the current one (Next from none is the first)."""
    keys = [e.key for e in EXERCISES]
    if tour.current not in keys:
        return load_exercise(session, tour, keys[0])
    index = keys.index(tour.current) + delta
    if not 0 <= index < len(keys):
        return {"tour_answer": LAST_STEP} if delta > 0 else {}
    return load_exercise(session, tour, keys[index])


def save_prediction(session: Session, tour: TourState, text: str) -> dict:
    """Keeps the learner's prediction for the current exercise (an empty box keeps the one saved before; an
    unchanged one keeps when it was written)."""
    exercise, text = find_exercise(tour.current), (text or "").strip()
    if exercise is None or not text:
        return {}
    saved = tour.predictions.get(exercise.key)
    if saved is None or saved.text != text:
        remember_run(tour, session)
        tour.predictions[exercise.key] = Prediction(text, before_run=exercise.key not in tour.observations)
    return lesson_view(session, tour)


def record_run(session: Session, tour: TourState) -> dict:
    """A run finished (or its speedup was measured): kept for the current exercise when it is that one's."""
    return lesson_view(session, tour) if remember_run(tour, session) else {}


def reveal_answer(session: Session, tour: TourState) -> dict:
    exercise = find_exercise(tour.current)
    if exercise is None:
        return {"tour_answer": NO_EXERCISE}
    remember_run(tour, session)
    tour.revealed.add(exercise.key)
    return {"tour_answer": compose_answer(exercise, session, tour), **lesson_view(session, tour)}


def reset(session: Session, tour: TourState, defaults: dict) -> dict:
    """Reset to defaults: the page's first settings (`defaults`, by component name), the Generate tab, and a
    tour with no exercise, prediction or recorded run (in the browser's storage too)."""
    fresh = TourState()
    return {**defaults, "tabs": gr.update(selected="generate"), "tour_question": NO_EXERCISE, "tour_answer": "",
            "tour_prediction": gr.update(value="", placeholder=""), "share_query": "", "link_note": "",
            **lesson_view(session, fresh)}


# --- components and wiring -------------------------------------------------------------------------------

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
        c["tour_question"] = gr.Markdown(NO_EXERCISE, elem_id="tour-question")
        c["tour_prediction"] = gr.Textbox(label="Your prediction (write it before you press Run)",
                                          lines=1, max_lines=3, submit_btn="Save", elem_id="tour-prediction")
        c["tour_compare"] = gr.HTML("", elem_id="tour-compare", label="Prediction and measurement",
                                    show_label=False)
        c["tour_reveal"] = gr.Button("Reveal answer", size="sm", elem_id="tour-reveal")
        c["tour_answer"] = gr.Markdown("", elem_id="tour-answer")


def reset_values(c: dict) -> dict:
    """Every component a step or a link may change, with the value it started with (for Reset to defaults)."""
    extras = [name for exercise in EXERCISES for name, _ in exercise.extra]
    return {name: c[name].value for name in (*SETTINGS, "preset", *SWEEP_FIELDS, *extras) if name in c}


def wire_tour(c: dict, session) -> None:
    """Binds the stepper, the prediction, Reveal answer and Reset; needs the sidebar, prompt, tabs and Sweep
    components (and records each finished Generate run through its exports)."""
    defaults = reset_values(c)
    lesson = ("tour_progress", *(f"tour_{e.key}" for e in EXERCISES), "tour_compare", "tour_state", "tour_store")
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
        on(c[f"tour_{exercise.key}"].click, partial(load_exercise, key=exercise.key), inputs, outputs, **quiet)
    on(c["tour_prev"].click, partial(step, delta=-1), inputs, outputs, **quiet)
    on(c["tour_next"].click, partial(step, delta=1), inputs, outputs, **quiet)
    on(c["tour_reset"].click, partial(reset, defaults=defaults), inputs, outputs, **quiet)
    on(c["tour_reveal"].click, reveal_answer, inputs, {n: outputs[n] for n in ("tour_answer", *lesson)}, **quiet)
    predicted = {n: outputs[n] for n in lesson}
    for trigger in (c["tour_prediction"].submit, c["tour_prediction"].blur):  # leaving the box (to press Run) saves
        on(trigger, save_prediction, [*inputs, c["tour_prediction"]], predicted, **quiet)
    if "exports" in c:  # a finished run (then its measured speedup) writes new exports: the tour records it
        on(c["exports"].change, record_run, inputs, predicted, **quiet)
    if "lossless_result" in c:  # each check's result is kept for the "Break the verifier" answer
        on(c["lossless_result"].change, record_check, [c["tour_state"], c["lossless_result"]],
           {n: c[n] for n in ("tour_state", "tour_store")}, **quiet)
