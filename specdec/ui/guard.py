"""Guards between the outside world and the callbacks, for a public deployment.

- harden_inputs(demo): every input component refuses a value of the wrong type, or a number that is
  not finite, with one line to the caller (a toast in the browser, an error for an API client) and
  no traceback in the server log; a number outside its box's range is one plain line too (Gradio's own
  check would log a traceback).
- guard_run(fn): wraps a timed callback (Generate, Race, Sweep). Before it starts, the request is
  checked against the deployment's limits (specdec.serving.limits: prompt size and text, max new tokens,
  sweep size, names); a refusal goes to the red error box, leaving everything else on screen. While
  it runs, the per-run time budget applies: when it is spent the run is stopped as Stop would stop
  it, and its last status says why.
"""
from __future__ import annotations

import inspect
import math
import time
import types
from functools import wraps
from typing import Callable, Iterator

from specdec.errors import SpecDecError
from specdec.serving.limits import (
    Limits,
    check_finite,
    check_max_new_tokens,
    check_model_name,
    check_prompt_text,
    check_sweep_size,
    current,
)
from specdec.ui.lab import error_update
from specdec.ui.views.render import render_status

import gradio as gr

NUMBER_INPUTS = ("k", "temperature", "top_p", "top_k", "seed")
NAME_INPUTS = ("target", "draft", "target_custom", "draft_custom")


# --- input components ---------------------------------------------------------------------------------

def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_text(value) -> bool:
    return value is None or isinstance(value, str)


def _is_choice(value) -> bool:
    return value is None or isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _expect(component) -> tuple[Callable, str] | None:
    """(test, what it expects) for the payload of an input component, by kind."""
    if isinstance(component, gr.Slider):
        return _is_number, "a finite number"
    if isinstance(component, gr.Number):
        return (lambda v: v is None or _is_number(v)), "a finite number"
    if isinstance(component, gr.Checkbox):
        return (lambda v: isinstance(v, bool)), "true or false"
    if isinstance(component, gr.Dropdown):
        if component.multiselect:
            return (lambda v: v is None or isinstance(v, list) and all(_is_choice(x) for x in v)), "a list of names"
        return _is_choice, "a name"
    if isinstance(component, gr.Textbox):
        return _is_text, "text"
    return None


def out_of_range(label: str, value, minimum, maximum) -> str | None:
    """The one plain line for a number outside its box's range (None inside it)."""
    low, high = minimum is not None and value < minimum, maximum is not None and value > maximum
    if not (low or high):
        return None
    if minimum is not None and maximum is not None:
        return f"{label} must be from {_number(minimum)} to {_number(maximum)} (got {_number(value)})."
    return f"{label} must be {'at least' if low else 'at most'} {_number(minimum if low else maximum)} " \
           f"(got {_number(value)})."


def _number(value) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


_HARDENED: dict[type, type] = {}


def hardened_class(cls: type) -> type:
    """cls with a preprocess that refuses a payload of the wrong kind, or a number outside the box's range, with one
    quiet gr.Error naming the input (no traceback in the server log). A class, not a wrapper on one instance: Gradio
    makes a fresh component of block.__class__ for each session whose component was updated, and that one must
    refuse quietly too."""
    if cls not in _HARDENED:
        def preprocess(self, payload):
            test, wanted = _expect(self)
            label = self.label or cls.__name__
            if not test(payload):
                raise gr.Error(f"{label}: expected {wanted}, got {_short(payload)}.", print_exception=False)
            message = isinstance(payload, (int, float)) and out_of_range(
                label, payload, getattr(self, "minimum", None), getattr(self, "maximum", None))
            if message:
                raise gr.Error(message, print_exception=False, duration=5)
            try:
                return cls.preprocess(self, payload)
            except gr.Error as exc:
                raise gr.Error(exc.message, print_exception=False) from None
            except (TypeError, ValueError, OverflowError) as exc:
                raise gr.Error(f"{label}: {exc}", print_exception=False) from None

        _HARDENED[cls] = types.new_class(cls.__name__, (cls,), exec_body=lambda ns: ns.update(
            preprocess=preprocess, __module__=cls.__module__, __qualname__=cls.__qualname__))
    return _HARDENED[cls]


def harden(component):
    """The component made a hardened_class instance (a payload of the wrong kind, a number out of range or an error
    from Gradio's own checks becomes one quiet gr.Error naming the input)."""
    if _expect(component) is not None and type(component) not in _HARDENED.values():
        component.__class__ = hardened_class(type(component))
    return component


def harden_inputs(demo) -> int:
    """Hardens every input component of the app, and the count of values an API call sends; returns how
    many components."""
    hardened = [harden(block) for block in demo.blocks.values() if _expect(block) is not None]
    quiet_input_count(demo)
    return len(hardened)


def quiet_input_count(demo) -> None:
    """An API call with too few values (an old client, a hand-written request) gets one line instead
    of Gradio's multi-line ValueError and its traceback in the server log."""
    check = demo.validate_inputs

    @wraps(check)
    def validate_inputs(block_fn, inputs):
        try:
            check(block_fn, inputs)
        except ValueError:
            wanted = sum(not isinstance(block, gr.State) for block in block_fn.inputs)  # the server adds the state
            raise gr.Error(f"{block_fn.name or 'This endpoint'} takes {wanted} values, got {len(inputs)}: send "
                           f"them all (see the API page) or use gradio_client with named parameters.",
                           print_exception=False) from None

    demo.validate_inputs = validate_inputs


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


# --- timed callbacks -------------------------------------------------------------------------------------

def check_request(named: dict, limits: Limits) -> None:
    """The deployment's limits, before anything loads or runs (InvalidSettingsError / ValueError)."""
    if named.get("prompt") is not None:
        check_prompt_text(named["prompt"], limits.max_prompt_chars)
    for name in NAME_INPUTS:
        check_model_name(named.get(name), f"Model name ({name.replace('_custom', '')})")
    for name in NUMBER_INPUTS:
        if named.get(name) is not None:
            check_finite(name.replace("_", "-"), named[name])
    if named.get("max_new_tokens") is not None:
        check_max_new_tokens(named["max_new_tokens"], limits)
    if "ks" in named:
        check_sweep_request(named, limits)


def check_sweep_request(named: dict, limits: Limits) -> None:
    from specdec.measure.sweep import parse_ks, parse_schedules, parse_temperatures

    drafts = named.get("drafts") or []
    drafts = [drafts] if isinstance(drafts, str) else list(drafts)
    for draft in drafts:
        check_model_name(draft, "Draft name")
    ks, temperatures = parse_ks(named.get("ks")), parse_temperatures(named.get("temperatures"))
    schedules = parse_schedules(named.get("schedules") or ["constant"])
    check_sweep_size(max(1, len([d for d in drafts if d and d.strip()])), len(ks), len(temperatures), limits,
                     len(schedules))


def budget_note(budget_s: float) -> str:
    return (f"Stopped after {budget_s:g} s, this deployment's time limit per run: lower max new tokens or the "
            "number of sweep points to finish within it.")


def within_budget(updates: Iterator[dict], session, budget_s: float | None, clock=time.monotonic) -> Iterator[dict]:
    """Passes a callback's updates through; once budget_s has passed, asks the session's run to stop
    (as Stop does) and adds the reason to the status of its last update."""
    if not budget_s or session is None:
        yield from updates
        return
    deadline, stopped, held = clock() + budget_s, False, None
    for update in updates:
        if not stopped and clock() >= deadline:
            stopped, session.stop_requested = True, True
        if not stopped:
            yield update
            continue
        if held is not None:
            yield held
        held = update
    if stopped:
        final = dict(held or {})
        final["status"] = render_status(budget_note(budget_s)) + (final.get("status") or "")
        yield final


def guard_run(fn: Callable) -> Callable:
    """fn: a generator callback yielding {output name: value} dicts, with a `session` parameter."""
    signature = inspect.signature(fn)

    @wraps(fn)
    def guarded(*args, **kwargs):
        limits = current()
        named = signature.bind_partial(*args, **kwargs).arguments
        try:
            check_request(named, limits)
        except (SpecDecError, ValueError) as exc:
            yield error_update(exc)
            return
        yield from within_budget(fn(*args, **kwargs), named.get("session"), limits.run_budget_s)

    return guarded
