"""Preloading: fetch, load and warm up the default pair in the background, and the status line's view of it."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

from specdec.models import fetch, presets
from specdec.serving.request import decode_settings
from specdec.ui.defaults import default_draft, measure_here, measured_here
from specdec.ui.lab import LabCore
from specdec.ui.models import describe_error

log = logging.getLogger("specdec.ui.launch")  # the app's log lines keep their logger name


PRELOAD_FETCH = ("smollm2-135m-instruct",)  # fetched (downloaded and converted once) before anything loads
FALLBACK_PAIR = ("lab-target", "lab-draft-distilled")  # bundled: always there, no network


@dataclass
class PreloadState:
    """What the background preload is doing, process-wide, for the status line (preload_update)."""

    message: str = ""
    done: bool = False
    pair: tuple[str, str] | None = None  # the pair actually preloaded
    fallback_reason: str | None = None  # why the default pair was replaced by the bundled family

    def say(self, message: str) -> None:
        self.message = str(message)
        log.info("preload: %s", message)


PRELOAD = PreloadState()


def warm_up(lab: LabCore, target: str = presets.DEFAULT_TARGET, draft: str | None = None,
            state: PreloadState = PRELOAD, ensure: Callable = fetch.ensure_model) -> None:
    """Fetches PRELOAD_FETCH, then loads the pair into the shared (read-only) model cache and runs a few
    tokens (draft: the app's default, defaults.py's measured drafter at its K; `auto` as a draft would measure
    every candidate's costs on its first run on a machine,
    auto_costs.py). If a model of the pair cannot be had, warms up the bundled family instead and records why.
    Never raises: the app keeps serving, and a later run shows its own error."""
    draft = draft or default_draft().name
    try:
        reason = fetch_first(state, (target, draft), ensure)
        if reason is None:
            try:
                return finish(state, load_and_run(lab, target, draft, state))
            except Exception as exc:  # noqa: BLE001
                reason = describe_error(exc)
        if (target, draft) == FALLBACK_PAIR:
            log.error("preloading the default pair failed: %s", reason)
            state.say(f"Preloading failed: {reason}")
            return finish(state, None)
        state.fallback_reason = f"{target} is not available ({reason}); using the bundled lab family instead"
        log.warning("preload: %s", state.fallback_reason)
        finish(state, load_and_run(lab, *FALLBACK_PAIR, state))
    except Exception:  # noqa: BLE001 (the app still serves; the first run will show the error)
        log.exception("preloading the default pair failed")
        finish(state, None)


def fetch_first(state: PreloadState, pair: tuple[str, str], ensure: Callable) -> str | None:
    """Fetches PRELOAD_FETCH and the pair's fetchable names; the reason if one the pair needs failed."""
    for name in dict.fromkeys([*PRELOAD_FETCH, *(n for n in pair if n and fetch.is_fetchable(n))]):
        try:
            ensure(name, progress=state.say)
        except Exception as exc:  # noqa: BLE001 (FetchError above all; anything else is reported the same)
            message = describe_error(exc)
            if name in pair:
                return message
            log.warning("preload: fetching %s failed: %s", name, message)
    return None


def load_and_run(lab: LabCore, target: str, draft: str, state: PreloadState) -> tuple[str, str]:
    """Loads the target and its drafter (a draft model, prompt lookup, …) as a Run would, then runs 8 tokens."""
    t = lab.load(target, progress=state.say)
    d = lab.engine.load_drafter(draft, t, load_model=lab.load, progress=state.say)
    state.say(f"Warming up {target} + {draft}…")
    ids = lab.engine.encode_prompt(t, "Write a Python function that adds two numbers.", True)
    lab.engine.generate(t, d, ids, decode_settings(4, 0.0, 1.0, 0, 8, 0))
    if target == presets.DEFAULT_TARGET:  # the default draft and K, from what auto measures on this machine
        try:
            measure_here(t, lambda name: lab.engine.load_drafter(name, t, load_model=lab.load), say=state.say)
        except Exception as exc:  # noqa: BLE001 (the cards' default stays; the app serves)
            log.warning("preload: measuring the default draft failed: %s", describe_error(exc))
    return target, draft


def finish(state: PreloadState, pair: tuple[str, str] | None) -> None:
    if pair is not None:
        log.info("preloaded %s + %s", *pair)  # experiments/measure_ui_latency.py waits for this line
    state.pair, state.done = pair, True


def preload_update(session=None, state: PreloadState = PRELOAD) -> dict:
    """For a gr.Timer tick in layout.py: {"status": preload message} while the preload runs; once it is
    done, "timer" (stop ticking) and an empty status or, after a fallback, the reason, with the bundled
    pair for "target" and "draft". Keys follow layout.bind's convention: absent = leave as it is.

    Once the session (a ui.session.Session) has started a run, the status line and the pair are the run's:
    the ticks leave them alone, so a preload still warming up never overwrites a run's "Step 10…" or
    "Stopped", nor swaps the models under it."""
    from specdec.ui.views.render import render_status

    import gradio as gr

    run_started = session is not None and bool(session.run_id)
    if not state.done:
        return {} if run_started else {
            "status": render_status(f"{state.message or 'Preparing the default models…'} ({fetch.describe_cache()})")}
    update: dict = {"timer": gr.Timer(active=False)}
    if run_started:
        return update
    update["status"] = ""
    if state.fallback_reason:
        update.update(status=render_status(state.fallback_reason), target=FALLBACK_PAIR[0], draft=FALLBACK_PAIR[1])
    elif (here := measured_here()) is not None and not getattr(session, "settings_chosen", False):
        update.update(draft=gr.update(value=here.name, info=here.why()), k=here.k)  # this machine's default
    return update


def preload_in_background(lab: LabCore) -> threading.Thread:
    thread = threading.Thread(target=warm_up, args=(lab,), name="specdec-preload", daemon=True)
    thread.start()
    return thread
