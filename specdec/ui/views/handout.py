"""The workshop's printable handout: one page (A4 or Letter) with every exercise of the tour, its learning goal,
its question, the learner's own prediction and what they measured (from the tour's records, when there are any) and
room to write, generated from the exercise data (ui/exercises.py), so it never disagrees with the app. A
self-contained HTML page with print CSS: open it, print it (or save it as PDF)."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Mapping, Sequence

from specdec.ui.exercises import Exercise
from specdec.ui.views.lesson import inline_markdown

FILE_NAME = "specdec-workshop-handout.html"
WORDS = [("acceptance rate", "accepted / drafted tokens"), ("α", "accepted / evaluated drafted tokens"),
         ("tokens per target forward", "how many tokens one check of the target yields (plain decoding: 1)"),
         ("speedup", "target-only time / speculative time, measured in timed pairs (1 = no gain)")]

CSS = """
@page { size: auto; margin: 8mm; }
* { box-sizing: border-box; }
body { font: 9pt/1.25 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111; margin: 0 auto;
  max-width: 190mm; padding: 8px; }
h1 { font-size: 13pt; margin: 0 0 2px; }
.meta { display: flex; gap: 24px; margin: 4px 0 6px; }
.meta span { flex: 1; border-bottom: 1px solid #777; padding-bottom: 2px; }
.words { font-size: 8.5pt; color: #333; margin: 0 0 6px; }
ol { list-style: none; padding: 0; margin: 0; display: grid; grid-template-columns: 1fr 1fr; gap: 4px 8px; }
li { border: 1px solid #999; border-radius: 4px; padding: 3px 6px; break-inside: avoid; }
.title { font-weight: 700; }
.title small { font-weight: 400; color: #555; }
.goal { font-style: italic; color: #333; margin: 1px 0; }
.question { margin: 1px 0; font-size: 8.5pt; }
.blank { display: flex; gap: 4px; margin-top: 3px; font-size: 8.5pt; color: #444; align-items: baseline; }
.blank span { white-space: nowrap; }
.predict { margin-top: 2px; font-size: 8.5pt; color: #333; }
.blank i { flex: 1; min-height: 1.25em; border-bottom: 1px solid #777; font-style: normal; color: #0b3d66; }
.answer { height: 3.75em; border-bottom: 1px solid #777; background: repeating-linear-gradient(transparent 0,
  transparent 1.25em, #bbb 1.25em, #bbb calc(1.25em + 1px)); }
.print-hint { margin: 8px 0; padding: 6px 10px; border: 1px dashed #0072B2; }
@media print { .print-hint { display: none; } body { padding: 0; } }
@media (max-width: 600px) { ol { grid-template-columns: 1fr; } }
"""


def blank(label: str, filled: str = "", name: str = "") -> str:
    """A labelled line the full width of its box, with the learner's own words on it when there are any."""
    return (f'<div class="blank" data-field="{html.escape(name)}"><span>{html.escape(label)}</span>'
            f"<i>{inline_markdown(filled)}</i></div>")


def exercise_item(n: int, exercise: Exercise, work: tuple[str, str] = ("", "")) -> str:
    """One exercise's box; `work`: the learner's (prediction, what they measured), "" where there is none yet."""
    prediction, measured = work
    return (f'<li data-exercise="{html.escape(exercise.key)}"><div class="title">{n} · '
            f"{html.escape(exercise.title)} <small>(about {exercise.minutes} min)</small></div>"
            f'<div class="goal">Goal: {html.escape(exercise.goal)}</div>'
            f'<div class="question">{inline_markdown(exercise.question)}</div>'
            f'<div class="predict">Predict: {html.escape(exercise.predict)}</div>'
            f'{blank("My prediction:", prediction, "prediction")}{blank("I measured:", measured, "measured")}'
            f'<div class="blank"><span>Why:</span></div><div class="answer"></div></li>')


def handout_html(exercises: Sequence[Exercise], work: Mapping[str, tuple[str, str]] | None = None,
                 title: str = "SpecDec Lab workshop") -> str:
    """The one-page handout for `exercises`, in their order; `work`: exercise key -> the learner's (prediction,
    what they measured), printed on their lines."""
    words = "; ".join(f"<b>{html.escape(w)}</b> = {html.escape(meaning)}" for w, meaning in WORDS)
    work = work or {}
    items = "\n".join(exercise_item(n, e, work.get(e.key, ("", ""))) for n, e in enumerate(exercises, start=1))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}: handout'
            f"</title><style>{CSS}</style></head><body>"
            f'<p class="print-hint">Print this page (Ctrl+P or ⌘P) or save it as PDF: it fits on one page.</p>'
            f"<h1>{html.escape(title)}: {len(exercises)} questions</h1>"
            '<div class="meta"><span>Name:</span><span>Date:</span></div>'
            "<p class=\"words\">A small <b>draft</b> proposes K tokens; the <b>target</b> checks them all in one "
            "forward pass and keeps the agreeing ones. Write your prediction <i>before</i> you press Run. "
            f"{words}.</p><ol>\n{items}\n</ol></body></html>")


def write_handout(folder: Path, exercises: Sequence[Exercise], work: Mapping[str, tuple[str, str]] | None = None
                  ) -> Path:
    """The handout as a file in `folder` (for the app's download button), with the learner's `work`; its path."""
    path = Path(folder) / FILE_NAME
    path.write_text(handout_html(exercises, work), encoding="utf-8")
    return path
