"""The tour as a lesson, drawn as HTML: the progress bar over the exercises (done, current, still to do) and the
learner's prediction set beside what they measured. Plain functions of the tour's state (ui/tour_state.py);
the colours are the token fates' (style.py): done is the accepted green, the current step the accent."""
from __future__ import annotations

import html
import re

from specdec.ui.exercises import EXERCISES, Exercise, exercise_number, find_exercise
from specdec.ui.tour_state import TourState

INLINE = ((re.compile(r"\*\*(.+?)\*\*"), r"<b>\1</b>"), (re.compile(r"\*(.+?)\*"), r"<i>\1</i>"),
          (re.compile(r"`(.+?)`"), r"<code>\1</code>"))


def progress_html(tour: TourState) -> str:
    """One segment per exercise, its number and title on hover; the sentence says where the learner is."""
    current = find_exercise(tour.current)
    done = sum(tour.done(e.key) for e in EXERCISES)
    left = sum(e.minutes for e in EXERCISES if not tour.done(e.key))
    segments = "".join(
        f'<span class="seg{" seg-done" if tour.done(e.key) else ""}{" seg-current" if e is current else ""}" '
        f'title="{n} · {html.escape(e.title)}{" (done)" if tour.done(e.key) else ""}"></span>'
        for n, e in enumerate(EXERCISES, start=1))
    where = (f"Exercise {exercise_number(current)} of {len(EXERCISES)}" if current
             else f"{len(EXERCISES)} exercises: press Next to start")
    return (f'<div class="tour-progress" role="progressbar" aria-valuemin="0" aria-valuemax="{len(EXERCISES)}" '
            f'aria-valuenow="{done}"><div class="segs">{segments}</div><div class="where"><b>{where}</b> · '
            f"{done} of {len(EXERCISES)} answered · about {left} minutes left</div></div>")


def inline_markdown(text: str) -> str:
    """The lesson's Markdown (bold, italics, code: the exercises' questions, describe_observation's sentences) as
    HTML, everything else escaped."""
    out = html.escape(text, quote=False)
    for pattern, replacement in INLINE:
        out = pattern.sub(replacement, out)
    return out


def compare_html(exercise: Exercise | None, tour: TourState, measured: str) -> str:
    """Your prediction | what you measured, side by side; `measured` is a sentence (Markdown bold allowed)."""
    if exercise is None:
        return ""
    prediction = tour.predictions.get(exercise.key)
    if prediction is None:
        guess, when = "<i>not written yet</i>", f"Guess first: {html.escape(exercise.predict)}"
    else:
        guess = html.escape(prediction.text)
        when = "written before the run" if prediction.before_run else "written after a run of this exercise"
    return (f'<div class="tour-compare"><div class="side" data-side="prediction"><div class="label">Your '
            f'prediction</div><div class="value">{guess}</div><div class="sub">{when}</div></div>'
            f'<div class="side" data-side="measured"><div class="label">What you measured</div>'
            f'<div class="value">{inline_markdown(measured)}</div></div></div>')
