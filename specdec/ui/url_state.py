"""Links that carry a configuration: the page's query parameters <-> the sidebar's settings, the chosen example
prompt and the tour's exercise, so "open this link" puts a whole class on the same setup.

Plain functions, no Gradio (share_link.py wires them). A link never carries a person's own typed text: a prompt
travels only as the number of an example (or the key of the exercise whose prompt it is), models only by the
names the app offers. Decoding never raises: every unknown or invalid parameter becomes a plain-words note and
the setting keeps what the page had.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence
from urllib.parse import urlencode

from specdec.engine.schedules import SCHEDULES
from specdec.ui.choices import offered_names
from specdec.ui.exercises import EXERCISES, Exercise, find_exercise
from specdec.ui.request_form import exercise_request, form_values


@dataclass(frozen=True)
class Field:
    """One setting in a link: its query parameter, its component's name (layout.py's dict) and its kind."""

    param: str
    name: str
    kind: type  # int, float, bool, or str (one of `choices`)
    words: str  # how the note names it


FIELDS = (
    Field("target", "target", str, "target"), Field("draft", "draft", str, "draft"),
    Field("k", "k", int, "K"), Field("schedule", "k_schedule", str, "K schedule"),
    Field("temperature", "temperature", float, "temperature"), Field("top_p", "top_p", float, "top-p"),
    Field("top_k", "top_k", int, "top-k"), Field("seed", "seed", int, "seed"),
    Field("max_new_tokens", "max_new_tokens", int, "max new tokens"), Field("chat", "chat", bool, "chat format"),
)
EXERCISE, EXAMPLE = "exercise", "example"
PASSED_ON = {"projector"}  # read by the page itself (style.LOAD_JS), not a setting
TRUE, FALSE = {"1", "true", "on", "yes"}, {"0", "false", "off", "no"}
SHOWN_CHARS = 40  # a bad value is quoted in a note up to this length


@dataclass(frozen=True)
class LinkSchema:
    """What a link may hold: the numeric settings' (low, high) ranges (the sidebar's sliders), the model names
    the app offers, and the example prompts by number (1 = the first)."""

    limits: Mapping[str, tuple[float, float]]
    models: frozenset = field(default_factory=lambda: frozenset(offered_names()))
    examples: Sequence[str] = ()

    def choices(self, name: str) -> Optional[frozenset]:
        return self.models if name in ("target", "draft") else frozenset(SCHEDULES) if name == "k_schedule" else None


@dataclass
class Decoded:
    """A link's meaning: the exercise to load first (its key), then the settings that override it, and one
    plain-words note per parameter that could not be used."""

    exercise: Optional[str] = None
    values: dict = field(default_factory=dict)  # component name -> value
    notes: list = field(default_factory=list)


def shown(value: str) -> str:
    """A value as a note quotes it: short, on one line, without the backticks or blank lines that would end its
    code span."""
    text = " ".join(str(value).split()).replace("`", "'")
    return f"`{text[:SHOWN_CHARS]}…`" if len(text) > SHOWN_CHARS else f"`{text}`"


def number_words(f: Field, schema: LinkSchema) -> str:
    low, high = schema.limits[f.name]
    kind = "a whole number" if f.kind is int else "a number"
    return f"{kind} from {low:g} to {high:g}"


def parse_value(f: Field, raw: str, schema: LinkSchema):
    """The setting's value from its parameter, or a ValueError whose text says what was expected."""
    text = raw.strip()
    if f.kind is bool:
        if text.lower() in TRUE | FALSE:
            return text.lower() in TRUE
        raise ValueError("1 (on) or 0 (off)")
    if f.kind is str:
        choices = schema.choices(f.name)
        if text in choices:
            return text
        raise ValueError(f"one of the {f.words} names the app offers")
    try:
        value = int(text) if f.kind is int else float(text)
    except ValueError:
        raise ValueError(number_words(f, schema)) from None
    low, high = schema.limits[f.name]
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(number_words(f, schema))
    return value


def example_prompt(raw: str, schema: LinkSchema) -> Optional[str]:
    """`example=3` (the third example) or `example=<exercise key>` (that exercise's prompt)."""
    text = raw.strip()
    if text.isdigit() and 1 <= int(text) <= len(schema.examples):
        return schema.examples[int(text) - 1]
    exercise = find_exercise(text)
    return exercise.prompt if exercise else None


def decode_link(params: Mapping[str, str], schema: LinkSchema) -> Decoded:
    """The query parameters' exercise and settings; anything unknown or invalid is a note, never an error."""
    decoded, by_param = Decoded(), {f.param: f for f in FIELDS}
    for param, raw in params.items():
        if param in PASSED_ON or param.startswith("__"):  # Gradio's and the Hub's own (e.g. __theme, __sign)
            continue
        if param == EXERCISE:
            if find_exercise(raw.strip()) is None:
                keys = ", ".join(e.key for e in EXERCISES)
                decoded.notes.append(f"exercise={shown(raw)} is not an exercise of the tour ({keys}): none loaded.")
            else:
                decoded.exercise = raw.strip()
        elif param == EXAMPLE:
            prompt = example_prompt(raw, schema)
            if prompt is None:
                decoded.notes.append(f"example={shown(raw)} is not one of the {len(schema.examples)} examples: "
                                     "the prompt is unchanged.")
            else:
                decoded.values["prompt"] = prompt
        elif param in by_param:
            f = by_param[param]
            try:
                decoded.values[f.name] = parse_value(f, raw, schema)
            except ValueError as expected:
                decoded.notes.append(f"{param}={shown(raw)}: the {f.words} must be {expected}; kept the page's "
                                     "setting.")
        else:
            decoded.notes.append(f"{shown(param)} is not a setting a link can carry: ignored.")
    return decoded


# --- encoding --------------------------------------------------------------------------------------------

def exercise_values(exercise: Exercise) -> dict:
    """The settings an exercise loads, by component name (what a link with `exercise=` need not repeat)."""
    return form_values(exercise_request(exercise))


def written(f: Field, value) -> str:
    if f.kind is bool:
        return "1" if value else "0"
    return f"{value:g}" if f.kind is float else str(int(value)) if f.kind is int else str(value)


def prompt_param(prompt: str, schema: LinkSchema) -> Optional[str]:
    """The `example` parameter for a prompt the app wrote itself (an example's or an exercise's), else None."""
    if prompt in schema.examples:
        return str(list(schema.examples).index(prompt) + 1)
    return next((e.key for e in EXERCISES if e.prompt == prompt), None)


def encode_link(values: Mapping, exercise_key: Optional[str], schema: LinkSchema) -> tuple[str, list[str]]:
    """(the query string, notes on what the link leaves out) for the page's settings `values` (by component
    name, as the sidebar holds them) and the tour's exercise; with an exercise, only what differs from it."""
    exercise, notes = find_exercise(exercise_key), []
    base = exercise_values(exercise) if exercise else {}
    params = {EXERCISE: exercise.key} if exercise else {}
    prompt = values.get("prompt")
    if prompt is not None and prompt != base.get("prompt"):
        example = prompt_param(prompt, schema)
        if example is None:
            notes.append("Your own prompt is not put in links: the link opens with "
                         + ("the exercise's prompt." if exercise else "the page's default prompt."))
        else:
            params[EXAMPLE] = example
    for f in FIELDS:
        if f.name not in values or values[f.name] is None:
            continue
        try:  # a value the page holds but a link could not carry (a typed model name) is left out
            value = parse_value(f, written(f, values[f.name]), schema)
        except (TypeError, ValueError):
            notes.append(f"The {f.words} {shown(values[f.name])} is not one the app offers by name: left out.")
            continue
        if value != base.get(f.name):
            params[f.param] = written(f, value)
    if any(values.get(name) for name in ("target_custom", "draft_custom")):
        notes.append("Model names typed under *Other model* are not put in links: left out.")
    return urlencode(params), notes
