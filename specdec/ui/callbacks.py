"""The Generate tab's callbacks: plain generators yielding {output name: value} dicts.

They run without a server (tests drive them with a fake engine); layout.py maps the dicts onto
components, leaving any output a dict does not name untouched (so errors never wipe the screen).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import gradio as gr

from specdec.events import DecodeSettings
from specdec.prompt_clean import clean_prompt
from specdec.sweep import baseline_key, remember
from specdec.theory import compute_stats, result_stats

from . import inspector
from .cards import render_cards, theory_note
from .models import describe_error, load_models, pick_name
from .plots import run_figures
from .render import render_error, render_status, render_tokens
from .session import RunView, Session
from .tables import export_trace, steps_dataframe


class Throttle:
    """True at most once per `interval_s` (the first call is always True)."""

    def __init__(self, interval_s: float, clock=time.monotonic):
        self.interval_s, self.clock, self.last = interval_s, clock, None

    def ready(self) -> bool:
        now = self.clock()
        if self.last is not None and now - self.last < self.interval_s:
            return False
        self.last = now
        return True


@dataclass
class Prepared:
    text: str  # the prompt as tokenised (after the optional clean-up)
    target: object
    drafts: list
    ids: list

    @property
    def draft(self):
        return self.drafts[0]


def make_settings(k, temperature, top_p, top_k, max_new_tokens, seed) -> DecodeSettings:
    """Slider values -> DecodeSettings; top-p 1 and top-k 0 switch those warpers off."""
    top_p = None if top_p is None or float(top_p) >= 1.0 else float(top_p)
    top_k = None if not top_k or int(top_k) <= 0 else int(top_k)
    seed = None if seed is None or seed == "" else int(seed)
    return DecodeSettings(max_new_tokens=int(max_new_tokens), k=int(k), temperature=float(temperature),
                          top_k=top_k, top_p=top_p, seed=seed)


def error_update(exc: BaseException) -> dict:
    """Shows the problem as a toast and in the error box; every other output is left as it is."""
    message = describe_error(exc)
    gr.Warning(message)
    return {"error": render_error(message), "status": ""}


class Lab:
    """Callbacks bound to an engine (the `specdec` package, or a fake in tests)."""

    def __init__(self, engine=None, *, device: str = "auto", allow_local_paths: bool = True,
                 token_interval_s: float = 0.02, heavy_interval_s: float = 0.25, settle_s: float = 0.2):
        if engine is None:
            import specdec as engine
        self.engine = engine
        self.load = partial(engine.load_model, device=device, dtype="auto", trust_remote_code=False,
                            allow_local_paths=allow_local_paths)
        self.token_interval_s, self.heavy_interval_s = token_interval_s, heavy_interval_s
        self.settle_s = settle_s  # pause before a timed run that follows a UI update

    # --- shared preparation ---------------------------------------------------------------------
    def prepare(self, prompt, clean, target_name: str, draft_names: list[str]):
        """Generator: validates and cleans the prompt, loads the models with progress, checks each
        draft against the target, tokenises; returns a Prepared."""
        if not (prompt or "").strip():
            raise ValueError("The prompt is empty: type something (or pick an example) first.")
        text, note = prompt, ""
        if clean:
            cleaned = clean_prompt(prompt)
            text, note = cleaned.text, f"Whitespace clean-up: {cleaned.summary()}."
        yield {"cleanup": note, "status": render_status("Loading models…")}
        if not target_name or not draft_names or not all(draft_names):
            raise ValueError("Choose a target and a draft model (a preset, or a name or path).")
        models = yield from relay(load_models(self.load, [target_name, *draft_names]),
                                  lambda message: {"status": render_status(message)})
        target, drafts = models[0], models[1:]
        for draft in drafts:
            self.engine.check_compatible(target, draft)
        ids = target.encode(text)
        if not ids:
            raise ValueError("The prompt is empty after tokenisation.")
        return Prepared(text, target, drafts, ids)

    def prepare_pair(self, prompt, clean, target, draft, target_custom, draft_custom):
        return (yield from self.prepare(prompt, clean, pick_name(target, target_custom),
                                        [pick_name(draft, draft_custom)]))

    def measure_baseline(self, session: Session, prep: Prepared, settings: DecodeSettings, view: RunView):
        """Generator returning the target-only RunResult for this configuration, measured once per
        session and then cached. Only a light update goes out first, and the browser gets `settle_s`
        to draw it, so rendering on a shared machine does not slow the measurement."""
        key = baseline_key(prep.target.name, prep.ids, settings)
        if key not in session.baselines:
            yield {"status": render_status("Measuring the target-only baseline (same prompt & settings)…"),
                   "tokens": render_tokens(view.events, view.prompt),
                   "cards": render_cards(result_stats(view.result), baseline_note="measuring target-only baseline…")}
            time.sleep(self.settle_s)
            remember(session.baselines, key, self.engine.generate(prep.target, None, prep.ids, settings))
        return session.baselines[key]

    # --- Generate -------------------------------------------------------------------------------
    def generate(self, session: Session, prompt, clean_whitespace, target, draft, target_custom,
                 draft_custom, k, temperature, top_p, top_k, max_new_tokens, seed):
        with session.timed_run():
            try:
                settings = make_settings(k, temperature, top_p, top_k, max_new_tokens, seed)
                prep = yield from self.prepare_pair(prompt, clean_whitespace, target, draft, target_custom,
                                                    draft_custom)
                view = yield from self.stream_run(session, prep, settings)
                if view.stopped:
                    yield self.finish_view(view, status="Stopped: no speedup is measured for a partial run.")
                    return
                view.baseline = yield from self.measure_baseline(session, prep, settings, view)
                yield self.finish_view(view, status="Done.")
            except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
                yield error_update(exc)

    def stream_run(self, session: Session, prep: Prepared, settings: DecodeSettings):
        """Generator: one token update per step (capped at 1/token_interval_s per second)."""
        gen = self.engine.Generation(prep.target, prep.draft, prep.ids, settings)
        events, tokens, heavy = [], Throttle(self.token_interval_s), Throttle(self.heavy_interval_s)
        try:
            for event in gen:
                events.append(event)
                if session.stop_requested:
                    break
                if tokens.ready() or event.finished:
                    update = {"tokens": render_tokens(events, prep.text, streaming=True), "error": ""}
                    if heavy.ready():
                        update["cards"] = render_cards(compute_stats(events))
                        update["status"] = render_status(f"Step {event.index + 1}…")
                    yield update
        finally:
            gen.close()
        session.last_run = RunView(prep.text, events, gen.result(), stopped=session.stop_requested)
        return session.last_run

    def finish_view(self, view: RunView, baseline_note: str = "", status: str = "") -> dict:
        """Everything about a finished (or stopped) run: tokens, cards, plots, steps table, exports."""
        memory = view.result.metrics.memory
        baseline = result_stats(view.baseline) if view.baseline is not None else None
        if not view.exports:
            view.exports = export_trace(view.result)
        return {
            "tokens": render_tokens(view.events, view.prompt, empty_note="(no tokens)"),
            "cards": render_cards(result_stats(view.result), baseline, memory, baseline_note,
                                  theory_note(view.events)),
            **run_figures(view.events, view.result, view.baseline, memory),
            "steps_table": steps_dataframe(view.events),
            "exports": view.exports,
            "status": render_status(status or "Run finished."),
            "error": "",
        }

    def stop(self, session: Session) -> dict:
        """Asks the session's running run to end after its current step. It writes no output (only a
        toast): the run reports "Stopped" itself, and a reply arriving after that must not replace it."""
        if session.running:
            session.stop_requested = True
            gr.Info("Stopping after the current step…")
        return {}

    # --- inspector & step-through ---------------------------------------------------------------
    def show_step(self, session: Session, step, position: str | None = None) -> dict:
        """Step-through: the output up to `step` (highlighted), its story, and one of its tokens."""
        event = session.event(step)
        if event is None:
            return {"step_story": '<div class="explain">Run a generation first.</div>'}
        keys = [key for _, key in inspector.position_choices(event)]
        position = position if position in keys else inspector.default_position(event)
        view = session.last_run
        return {
            "inspect_step": gr.update(value=event.index, maximum=max(len(view.events) - 1, 1)),
            "inspect_pos": gr.update(choices=inspector.position_choices(event), value=position),
            "replay": render_tokens(view.events[: event.index + 1], view.prompt, current_step=event.index),
            "step_story": inspector.narrate_step(event),
            **self.show_token(session, event.index, position),
        }

    def show_token(self, session: Session, step, position) -> dict:
        event = session.event(step)
        if event is None:
            return {}
        return {"inspect_plot": inspector.inspect_figure(event, position),
                "inspect_details": inspector.inspect_details(event, position)}

    def first_interesting_step(self, session: Session) -> dict:
        """After a run: open step-through at the first step with a rejection (else step 0)."""
        events = session.last_run.events if session.last_run else []
        step = next((e.index for e in events if any(d.evaluated and not d.accepted for d in e.drafted)), 0)
        return self.show_step(session, step)

    def step_by(self, session: Session, step, delta: int) -> dict:
        return self.show_step(session, int(step or 0) + delta)

    def select_token(self, session: Session, evt: gr.SelectData) -> dict:
        """A click on a token in the output opens the inspector on it."""
        step, position = evt.index if isinstance(evt.index, (list, tuple)) else (evt.index, None)
        return {**self.show_step(session, step, position), "inspector_box": gr.update(open=True)}


def relay(messages, wrap):
    """`yield from` that wraps each yielded message; returns the inner generator's return value."""
    while True:
        try:
            message = next(messages)
        except StopIteration as stop:
            return stop.value
        yield wrap(message)
