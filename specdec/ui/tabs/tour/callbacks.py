"""The workshop tour's callbacks: an exercise loaded (its settings, its tab, its goal and question), Previous / Next,
the learner's prediction saved, "Reveal answer" quoting the learner's own figures before the general explanation,
"Reset to defaults", and the page's load event (a link's exercise and settings, the tour's records restored from
the browser's storage). The exercises are plain data (ui/exercises.py); layout.py lays the tour out.

Callbacks are plain functions returning {component name: value} dicts, with the names of the page's
component dict; a TourState (ui/tour_state.py; per browser session in gr.State, and a copy in the browser's
storage) remembers which exercise is loaded, the predictions and the figures recorded for each, so a later
answer can compare with an earlier exercise, even after a page reload.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from specdec.models import presets
from specdec.ui.exercises import EXERCISES, Exercise, exercise_number, find_exercise
from specdec.ui.request_form import differences as differences_from
from specdec.ui.request_form import exercise_request, form_values
from specdec.ui.session import Session
from specdec.ui.share_link import note_of
from specdec.ui.tour_state import Prediction, TourState, describe_observation, from_store, observation_of, to_store
from specdec.ui.url_state import LinkSchema, decode_link
from specdec.ui.views.handout import write_handout
from specdec.ui.views.lesson import compare_html, progress_html
from specdec.ui.views.load import crossover_text
from specdec.ui.views.sweep import best_summary

import gradio as gr

TAB_LABELS = {"generate": "Generate", "race": "Race", "sweep": "Sweep", "lossless": "Is it exact?",
              "cost": "Why this speedup?", "theory": "How it works", "load": "Under load"}  # tab id -> its label in layout.py
NO_EXERCISE = "*Press **Next** to start, or pick an exercise: its button loads the settings and asks the question.*"
LAST_STEP = "*That was the last exercise. The handout (button above) has every question, for the class's notes.*"


def remember_run(tour: TourState, session: Session) -> bool:
    """Records the last run under the loaded exercise when its record says it is that exercise's run (the request
    was the exercise's own when it ran: request_form.read_request); True when it did."""
    exercise, record = find_exercise(tour.current), session.last_run
    if exercise is None or exercise.evidence != "run" or record is None or record.exercise != exercise.key:
        return False
    tour.observations[exercise.key] = observation_of(record)
    return True


# --- the answer: the learner's figures, then the explanation --------------------------------------------

def run_evidence(exercise: Exercise, session: Session, tour: TourState) -> str:
    record = session.last_run
    if record is None:
        return ("**You have not run anything yet.** Press **Run** in the Generate tab, then reveal again: the answer "
                "starts with your own figures.")
    lines = [f"**Your last run** ({record.ran_words().removeprefix('Ran ').rstrip('.')}, "
             f"T = {record.settings.temperature:g}): {describe_observation(observation_of(record))}."]
    differences = [] if record.exercise == exercise.key else differences_from(record.request, exercise)
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


def load_evidence(exercise: Exercise, session: Session, tour: TourState) -> str:
    run = session.load_shown
    if run is None:
        return "**No load measurement seen yet.** Open the Under load tab, read its plots, then reveal again."
    return f"**The measurement you read** ({run.get('machine', 'its machine')}): {crossover_text(run)}"


EVIDENCE = {"run": run_evidence, "sweep": sweep_evidence, "lossless": lossless_evidence, "load": load_evidence}


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
    if exercise.evidence == "load":
        return crossover_text(session.load_shown) if session.load_shown else "Nothing yet: open **Under load**."
    if tour.checks:
        return "; ".join(f"{verifier}: {text}" for verifier, text in tour.checks.items())
    return "Nothing yet: press **Check** (Is it exact? tab)."


def handout_work(session: Session, tour: TourState) -> dict:
    """exercise key -> the learner's (prediction, what they measured) for the handout ("" where there is none)."""
    work = {}
    for exercise in EXERCISES:
        prediction = tour.predictions.get(exercise.key)
        done = exercise.key in tour.observations if exercise.evidence == "run" else \
            bool(session.sweep_rows) if exercise.evidence == "sweep" else \
            session.load_shown is not None if exercise.evidence == "load" else bool(tour.checks)
        work[exercise.key] = (prediction.text if prediction else "",
                              measured_text(exercise, session, tour) if done else "")
    return work


def lesson_view(session: Session, tour: TourState) -> dict:
    """The stepper's progress and buttons, prediction beside measurement, the handout with the learner's work on it,
    and the browser's copy of it all."""
    exercise = find_exercise(tour.current)
    measured = measured_text(exercise, session, tour) if exercise else ""
    handout = write_handout(Path(tempfile.mkdtemp(prefix="specdec-")), EXERCISES, handout_work(session, tour))
    return {"tour_progress": progress_html(tour), **step_buttons(tour),
            "tour_compare": compare_html(exercise, tour, measured), "tour_state": tour, "tour_store": to_store(tour),
            "tour_handout": str(handout)}


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
    """{component name: value} for the sidebar, the prompt (the exercise's request, request_form.form_values) and
    (when the exercise has them) the Sweep's fields; the "name or path" fields are cleared, as they would override
    the dropdowns."""
    update = {**form_values(exercise_request(exercise)), **preset_for(exercise.target)}
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
    session.settings_chosen = True
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


def page_load(session: Session, state: TourState, stored, schema: LinkSchema, request: gr.Request = None) -> dict:
    """The page opens: the tour's records come back from the browser's storage, then the link's exercise (as its
    step button would load it) and the link's settings over it."""
    restored = from_store(stored)
    state.observations, state.predictions = restored.observations, restored.predictions
    state.checks, state.revealed = restored.checks, restored.revealed
    params = dict(request.query_params) if request is not None else {}
    decoded = decode_link(params, schema)
    update = load_exercise(session, state, decoded.exercise) if decoded.exercise else lesson_view(session, state)
    update.update(decoded.values)
    session.settings_chosen = bool(decoded.exercise or decoded.values)
    if "target" in decoded.values:
        update.update(preset_for(decoded.values["target"]))
    if decoded.values:
        update.update(target_custom="", draft_custom="")  # they would override the link's dropdowns
    update.pop("share_query", None)  # the address keeps the link as opened
    update.pop("tour_store", None)  # the browser keeps what it has (nothing here is new)
    update["link_note"] = note_of(decoded.notes, bool(decoded.exercise or decoded.values))
    return update
