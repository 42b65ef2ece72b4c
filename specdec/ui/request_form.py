"""The request form: the components of the sidebar and the prompt that make one RunRequest (specdec/serving/request.py),
named once here and read and written only through here. Every timed tab's callback takes the RunRequest this builds
(wiring.on_request), the tour loads an exercise by writing its request's values, links carry them (url_state.py),
and the board files a run under the exercise its request names.

An exercise's run: a request is an exercise's when the tour has that exercise loaded and the request is the
exercise's own (its prompt, models and settings); a run of the same page after the learner changed a setting is
not, and the tour and the board say so."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from specdec.errors import InvalidSettingsError
from specdec.models.prompt_clean import clean_prompt
from specdec.serving.request import RunRequest, decode_settings
from specdec.ui.exercises import Exercise, find_exercise
from specdec.ui.models import pick_name

# The form's components by their names in the page's component dict, in the order the API's endpoints take them.
FORM = ("prompt", "clean", "target", "draft", "target_custom", "draft_custom", "k", "temperature", "top_p", "top_k",
        "max_new_tokens", "seed", "k_schedule", "chat")
SETTING_FIELDS = ("k", "temperature", "top_p", "top_k", "max_new_tokens", "seed", "k_schedule")
DEFAULTS = {"prompt": "", "clean": True, "target": "", "draft": "", "target_custom": "", "draft_custom": "", "k": 4,
            "temperature": 0.0, "max_new_tokens": 64, "top_p": 1.0, "top_k": 0, "seed": 0,
            "k_schedule": "constant", "chat": True}


def read_request(values: Mapping[str, Any], exercise_key: Optional[str] = None) -> RunRequest:
    """The request the form's `values` (by FORM's names) make; `exercise_key`: the exercise the tour has loaded, kept
    only when this is that exercise's own request. Bad values raise one InvalidSettingsError in plain words."""
    form = {**DEFAULTS, **values}
    target, draft = pick_name(form["target"], form["target_custom"]), pick_name(form["draft"], form["draft_custom"])
    try:
        settings = decode_settings(*(form[name] for name in SETTING_FIELDS))
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidSettingsError(f"A decoding setting is not a number: {exc}") from None
    request = RunRequest(prompt=form["prompt"] or "", target=target, draft=draft, settings=settings,
                         chat=form["chat"] is not False, clean_whitespace=bool(form["clean"]))
    exercise = find_exercise(exercise_key)
    return request.with_exercise(exercise.key) if exercise is not None and is_exercise_run(request, exercise) \
        else request


def exercise_request(exercise: Exercise) -> RunRequest:
    """The request an exercise sets up (its prompt, models and settings)."""
    settings = decode_settings(exercise.k, exercise.temperature, exercise.top_p, exercise.top_k,
                               exercise.max_new_tokens, exercise.seed, exercise.k_schedule)
    return RunRequest(prompt=exercise.prompt, target=exercise.target, draft=exercise.draft, settings=settings,
                      chat=exercise.chat, exercise=exercise.key)


def differences(request: RunRequest, exercise: Exercise) -> list[str]:
    """How `request` differs from the exercise's own, in words ([] when it is the exercise's)."""
    wanted = exercise_request(exercise)
    found = [] if request.prompt in (wanted.prompt, clean_prompt(wanted.prompt).text) else ["another prompt"]
    for name, value, asked in (("target", request.target, wanted.target), ("draft", request.draft, wanted.draft),
                               ("chat format", request.chat, wanted.chat)):
        if value != asked:
            found.append(f"{name} {value} (exercise: {asked})")
    for name in SETTING_FIELDS:
        value, asked = getattr(request.settings, name), getattr(wanted.settings, name)
        if value != asked:
            found.append(f"{name.replace('_', ' ')} {value} (exercise: {asked})")
    return found


def is_exercise_run(request: RunRequest, exercise: Exercise) -> bool:
    return not differences(request, exercise)


def form_values(request: RunRequest) -> dict:
    """The form's values that show `request` (by FORM's names; the typed model names cleared)."""
    return {**request.field_values(), "target_custom": "", "draft_custom": ""}
