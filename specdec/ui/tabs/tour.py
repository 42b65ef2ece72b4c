"""The workshop tour: a button per exercise (exercises.py) that loads its settings into the app and asks
its question, and a "Reveal answer" button that quotes what the learner measured before the general
explanation.

Callbacks are plain functions returning {component name: value} dicts, with the names of layout.py's
component dict; a TourState (per browser session, in gr.State) remembers which exercise is loaded and
the figures recorded for each, so a later answer can compare with an earlier exercise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Optional

from specdec.engine.theory import measured_alpha
from specdec.models import presets
from specdec.models.prompt_clean import clean_prompt
from specdec.ui.callbacks import make_settings
from specdec.ui.links import link_docs
from specdec.ui.session import RunView, Session
from specdec.ui.tabs.exercises import EXERCISES, Exercise, exercise_number, find_exercise
from specdec.ui.tabs.sweep_run import best_summary
from specdec.ui.wiring import on

import gradio as gr

TAB_LABELS = {"generate": "Generate", "race": "Race", "sweep": "Sweep", "lossless": "Is it exact?",
              "cost": "Why this speedup?", "theory": "How it works"}  # tab id -> its label in layout.py
SETTINGS = ("prompt", "target", "draft", "target_custom", "draft_custom", "k", "k_schedule", "temperature", "top_p",
            "top_k", "seed", "max_new_tokens", "chat")  # the components every exercise sets
SWEEP_FIELDS = ("sweep_drafts", "sweep_ks", "sweep_temps", "sweep_tokens")
COMPARED = ("target", "draft", "k", "k_schedule", "temperature", "top_p", "top_k", "seed", "max_new_tokens")
TOUR_INTRO = ("Each button loads an exercise's models and settings (the sidebar and the prompt change), opens the "
              "tab it needs and asks a question. Run it, then press **Reveal answer**: the answer quotes your own "
              "figures first. docs/workshop.md is the teacher's guide.")
BUTTONS_PER_ROW = 4
NO_EXERCISE = "*Pick an exercise: its button loads the settings and asks the question.*"


@dataclass(frozen=True)
class Observation:
    """What one finished run showed, as the tour quotes it."""

    acceptance_rate: Optional[float]  # accepted / drafted
    alpha: Optional[float]  # accepted / evaluated
    tokens_per_forward: Optional[float]
    speedup: Optional[str]  # Estimate.describe(), None when not measured
    verdict: Optional[str]


@dataclass
class TourState:
    current: Optional[str] = None  # the key of the exercise loaded last
    observations: dict = field(default_factory=dict)  # exercise key -> Observation of its own run
    checks: dict = field(default_factory=dict)  # verifier name -> what its last "Is it exact?" check gave


# --- what a run showed, and whether it is the exercise's run --------------------------------------------

def observation_of(view: RunView) -> Observation:
    stats = view.result.metrics
    estimate = view.estimate if view.estimate is not None and view.estimate.ratio is not None else None
    return Observation(stats.acceptance_rate, measured_alpha(view.events), stats.tokens_per_forward,
                       estimate.describe() if estimate else None, estimate.verdict if estimate else None)


def describe_observation(obs: Observation) -> str:
    parts = [("no drafted tokens" if obs.acceptance_rate is None
              else f"acceptance rate **{obs.acceptance_rate:.0%}** (accepted / drafted)")]
    if obs.alpha is not None:
        parts.append(f"α = {obs.alpha:.2f} (accepted / evaluated)")
    if obs.tokens_per_forward is not None:
        parts.append(f"{obs.tokens_per_forward:.2f} tokens per target forward")
    if obs.speedup is None:
        parts.append("no speedup measured (the run was stopped, or is still measuring)")
    else:
        parts.append(f"measured speedup **{obs.speedup}**" + (f": {obs.verdict}" if obs.verdict else ""))
    return ", ".join(parts)


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


def remember_run(tour: TourState, session: Session) -> None:
    """Records the last run under the loaded exercise when it is that exercise's run."""
    exercise, view = find_exercise(tour.current), session.last_run
    if exercise is None or exercise.evidence != "run" or view is None or view.result is None:
        return
    if not mismatches(exercise, view):
        tour.observations[exercise.key] = observation_of(view)


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
    return {"tour_state": tour}


EVIDENCE = {"run": run_evidence, "sweep": sweep_evidence, "lossless": lossless_evidence}


def compose_answer(exercise: Exercise, session: Session, tour: TourState) -> str:
    return f"{EVIDENCE[exercise.evidence](exercise, session, tour)}\n\n**Why.** {exercise.explanation}"


# --- callbacks -------------------------------------------------------------------------------------------

def exercise_settings(exercise: Exercise) -> dict:
    """{component name: value} for the sidebar, the prompt and (when the exercise has them) the Sweep's fields;
    the "name or path" fields are cleared, as they would override the dropdowns."""
    update = {"prompt": exercise.prompt, "target": exercise.target, "draft": exercise.draft, "target_custom": "",
              "draft_custom": "", "k": exercise.k, "k_schedule": exercise.k_schedule,
              "temperature": exercise.temperature, "top_p": exercise.top_p, "top_k": exercise.top_k,
              "seed": exercise.seed, "max_new_tokens": exercise.max_new_tokens, "chat": exercise.chat}
    preset = next((p.key for p in presets.PAIR_PRESETS if p.target == exercise.target), None)
    if preset is not None:
        update["preset"] = preset  # the pair dropdown names the exercise's pair (.input does not fire on this)
    if exercise.sweep is not None:
        s = exercise.sweep
        update.update(sweep_drafts=list(s.drafts), sweep_ks=s.ks, sweep_temps=s.temperatures, sweep_tokens=s.tokens)
    return {**update, **dict(exercise.extra)}


def describe_settings(exercise: Exercise) -> str:
    warpers = "".join([f", top-p {exercise.top_p:g}" if exercise.top_p < 1 else "",
                       f", top-k {exercise.top_k}" if exercise.top_k > 0 else ""])
    return (f"Loaded: target `{exercise.target}`, draft `{exercise.draft}`, K = {exercise.k} ({exercise.k_schedule}), "
            f"T = {exercise.temperature:g}{warpers}, seed {exercise.seed}, {exercise.max_new_tokens} new tokens, "
            f"chat format {'on' if exercise.chat else 'off'}.")


def render_question(exercise: Exercise) -> str:
    tab = TAB_LABELS.get(exercise.tab, exercise.tab)
    return (f"**Exercise {exercise_number(exercise)} of {len(EXERCISES)}: {exercise.title}** · about "
            f"{exercise.minutes} minutes · {tab} tab\n\n{exercise.question}\n\n*{describe_settings(exercise)}*")


def load_exercise(session: Session, tour: TourState, key: str) -> dict:
    """An exercise's button: records the run of the exercise being left, loads the new one's settings, opens
    its tab, shows its question and hides the previous answer."""
    exercise = find_exercise(key)
    if exercise is None:
        return {"tour_question": f"Unknown exercise {key!r}."}
    remember_run(tour, session)
    tour.current = exercise.key
    return {**exercise_settings(exercise), "tabs": gr.update(selected=exercise.tab),
            "tour_question": render_question(exercise), "tour_answer": "", "tour_state": tour}


def reveal_answer(session: Session, tour: TourState) -> dict:
    exercise = find_exercise(tour.current)
    if exercise is None:
        return {"tour_answer": NO_EXERCISE}
    remember_run(tour, session)
    return {"tour_answer": compose_answer(exercise, session, tour), "tour_state": tour}


# --- components and wiring -------------------------------------------------------------------------------

def build_tour(c: dict) -> None:
    """The tour's accordion (above the tabs): exercise buttons, the question, Reveal answer, the answer."""
    with gr.Accordion(f"Workshop tour: {len(EXERCISES)} exercises, about an hour", open=False, elem_id="tour"):
        gr.Markdown(link_docs(TOUR_INTRO), elem_classes=["explain-note"])
        for first in range(0, len(EXERCISES), BUTTONS_PER_ROW):
            with gr.Row():
                for n, exercise in enumerate(EXERCISES[first:first + BUTTONS_PER_ROW], start=first + 1):
                    c[f"tour_{exercise.key}"] = gr.Button(f"{n} · {exercise.title}", size="sm", min_width=160,
                                                          elem_id=f"tour-{exercise.key}")
        c["tour_question"] = gr.Markdown(NO_EXERCISE, elem_id="tour-question")
        c["tour_reveal"] = gr.Button("Reveal answer", size="sm", elem_id="tour-reveal")
        c["tour_answer"] = gr.Markdown("", elem_id="tour-answer")
        c["tour_state"] = gr.State(TourState())


def wire_tour(c: dict, session) -> None:
    """Binds the exercise buttons and Reveal answer; needs the sidebar, prompt, tabs and Sweep components."""
    extras = [name for exercise in EXERCISES for name, _ in exercise.extra]
    loaded = (*SETTINGS, "preset", *SWEEP_FIELDS, *extras, "tabs", "tour_question", "tour_answer", "tour_state")
    outputs = {name: c[name] for name in loaded if name in c}
    inputs = [session, c["tour_state"]]
    for exercise in EXERCISES:
        on(c[f"tour_{exercise.key}"].click, partial(load_exercise, key=exercise.key), inputs, outputs,
           api_visibility="private", concurrency_limit=None)
    on(c["tour_reveal"].click, reveal_answer, inputs, {n: c[n] for n in ("tour_answer", "tour_state")},
       api_visibility="private", concurrency_limit=None)
    if "lossless_result" in c:  # each check's result is kept for the "Break the verifier" answer
        on(c["lossless_result"].change, record_check, [c["tour_state"], c["lossless_result"]],
           {"tour_state": c["tour_state"]}, api_visibility="private", concurrency_limit=None)
