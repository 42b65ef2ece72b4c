"""The Generate tab's callbacks: plain generators yielding {output name: value} dicts.

They run without a server (tests drive them with a fake engine); layout.py maps the dicts onto
components, leaving any output a dict does not name untouched (so errors never wipe the screen).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

from specdec.engine.events import DecodeSettings
from specdec.engine.theory import live_metrics
from specdec.measure.speedup import INTERACTIVE, SWEEP, Policy, cached
from specdec.models.prompt_clean import clean_prompt
from specdec.runners.tuning import chosen_for
from specdec.serving.shared_measurements import sharing_note
from specdec.ui.classroom import Classroom, queue_note, shared_run_note
from specdec.ui.models import describe_error, load_target_and_drafts, pick_name
from specdec.ui.names import explain_unknown_names
from specdec.ui.session import RunView, Session
from specdec.ui.throttle import Throttle
from specdec.ui.views import inspector
from specdec.ui.views.cards import alpha_note, auto_card, render_cards, theory_note
from specdec.ui.views.plots import run_figures, throughput_figure
from specdec.ui.views.render import render_error, render_status, render_tokens
from specdec.ui.views.tables import export_trace, steps_dataframe
from specdec.ui.views.verdict import render_progress, render_verdict

import gradio as gr


@dataclass
class Prepared:
    text: str  # the prompt as tokenised (after the optional clean-up)
    target: object
    drafts: list
    ids: list

    @property
    def draft(self):
        return self.drafts[0]


def make_settings(k, temperature, top_p, top_k, max_new_tokens, seed, k_schedule="constant") -> DecodeSettings:
    """Slider values -> DecodeSettings; top-p 1 and top-k 0 switch those warpers off."""
    top_p = None if top_p is None or float(top_p) >= 1.0 else float(top_p)
    top_k = None if not top_k or int(top_k) <= 0 else int(top_k)
    seed = None if seed is None or seed == "" else int(seed)
    return DecodeSettings(max_new_tokens=int(max_new_tokens), k=int(k), temperature=float(temperature),
                          top_k=top_k, top_p=top_p, seed=seed, k_schedule=str(k_schedule or "constant"))


def error_update(exc: BaseException) -> dict:
    """Shows the problem as a toast and in the error box; every other output is left as it is."""
    message = describe_error(exc)
    gr.Warning(message)
    return {"error": render_error(message), "status": ""}


class Lab:
    """Callbacks bound to an engine (the `specdec` package, or a fake in tests)."""

    def __init__(self, engine=None, *, device: str = "auto", allow_local_paths: bool = True,
                 token_interval_s: float = 0.02, heavy_interval_s: float = 0.25, settle_s: float = 0.3,
                 policy: Policy = INTERACTIVE, sweep_policy: Policy = SWEEP, classroom: Classroom | None = None):
        if engine is None:
            import specdec as engine
        self.engine = engine
        self.load = explain_unknown_names(partial(engine.load_model, device=device, dtype="auto",
                                                  trust_remote_code=False, allow_local_paths=allow_local_paths))
        self.token_interval_s, self.heavy_interval_s = token_interval_s, heavy_interval_s
        self.settle_s = settle_s  # pause before timed runs that follow a heavy UI update
        self.policy, self.sweep_policy = policy, sweep_policy  # when a measurement has repeated enough
        self.classroom = classroom or Classroom()  # what this process's users share (classroom.py)

    # --- shared preparation ---------------------------------------------------------------------
    def prepare(self, prompt, clean, target_name: str, draft_names: list[str], chat: bool = True):
        """Generator: validates and cleans the prompt, loads the target and its drafters with progress
        (a draft model must share the target's tokenizer or becomes a re-tokenised drafter), tokenises
        (in the target's chat template when `chat` and it has one); returns a Prepared."""
        if not (prompt or "").strip():
            raise ValueError("The prompt is empty: type something (or pick an example) first.")
        text, note = prompt, ""
        if clean:
            cleaned = clean_prompt(prompt)
            text, note = cleaned.text, f"Whitespace clean-up: {cleaned.summary()}."
        yield {"cleanup": note, "status": render_status("Loading models…")}
        if not target_name or not draft_names or not all(draft_names):
            raise ValueError("Choose a target and a draft (a preset, or a name or path).")
        models = yield from relay(load_target_and_drafts(self.load, self.engine.load_drafter, target_name,
                                                         draft_names),
                                  lambda message: {"status": render_status(message)})
        target, drafts = models[0], models[1:]
        ids = self.engine.encode_prompt(target, text, chat)
        if not ids:
            raise ValueError("The prompt is empty after tokenisation.")
        return Prepared(text, target, drafts, ids)

    def prepare_pair(self, prompt, clean, target, draft, target_custom, draft_custom, chat=True):
        return (yield from self.prepare(prompt, clean, pick_name(target, target_custom),
                                        [pick_name(draft, draft_custom)], chat=chat is not False))

    def measure_shared(self, session: Session, prep: Prepared, settings: DecodeSettings):
        """Generator of the measurement's Progress (classroom.py): this configuration is measured once per app
        process and shared by every session (a private prompt's, once per session); a request for one being
        measured follows it; one waiting for the device says where it stands. Stop ends this request's part."""
        yield from self.classroom.measure(self.engine, session, prep, settings, self.policy,
                                          lambda: session.stop_requested)

    def measure(self, session: Session, prep: Prepared, settings: DecodeSettings):
        """Generator of speedup Estimates for this configuration (specdec.measure.speedup): a first figure
        after one timed pair, then tighter ones; the same measurement for every session (measure_shared), so
        Generate and Race show the same figure. Stop ends it after the current run."""
        for progress in self.measure_shared(session, prep, settings):
            if progress.estimate is not None:
                yield progress.estimate

    def measured_runs(self, session: Session, prep: Prepared, settings: DecodeSettings):
        """The latest timed pair's (speculative, target-only) RunResults, or (None, None)."""
        m = cached(session.measurements, prep.target, prep.draft, prep.ids, settings)
        return (m.lead_result, m.follow_result) if m is not None else (None, None)

    # --- Generate -------------------------------------------------------------------------------
    def generate(self, session: Session, prompt, clean_whitespace, target, draft, target_custom,
                 draft_custom, k, temperature, top_p, top_k, max_new_tokens, seed, k_schedule="constant",
                 chat=True):
        with session.timed_run():
            try:
                settings = make_settings(k, temperature, top_p, top_k, max_new_tokens, seed, k_schedule)
                if session.vllm is not None:  # the sidebar's engine: a vLLM server (vllm_engine.py)
                    from specdec.ui.vllm.engine import generate as generate_on_vllm
                    yield from generate_on_vllm(self, session, prompt, settings, chat is not False)
                    return
                prep = yield from self.prepare_pair(prompt, clean_whitespace, target, draft, target_custom,
                                                    draft_custom, chat)
                view = yield from self.stream_run(session, prep, settings)
                if view.stopped:
                    yield self.finish_view(view, status="Stopped: no speedup is measured for a partial run.")
                    return
                yield self.finish_view(view, note="measuring…",
                                       status="Measuring the speedup: timed repeats of both decoders…",
                                       headline=render_progress("Measuring the speedup: speculative and "
                                                                "target-only decoding, timed in pairs…"))
                time.sleep(self.settle_s)  # let the browser draw the plots before the timing starts
                yield from self.measure_view(session, prep, settings, view)
            except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
                yield error_update(exc)

    def measure_view(self, session: Session, prep: Prepared, settings: DecodeSettings, view: RunView):
        """Generator: the speedup card tightens after every timed pair; the last update is complete (an
        API client gets only that one), with the throughput plot of the latest timed pair and the exports
        (with the measurement)."""
        shared = None
        for progress in self.measure_shared(session, prep, settings):
            shared, view.estimate = progress.shared, progress.estimate or view.estimate
            if progress.role == "queued" and progress.estimate is None and not session.stop_requested:
                yield {"status": render_status(queue_note(progress))}
            elif view.estimate is not None and not view.estimate.final:
                yield {"cards": self.view_cards(view),
                       "status": render_status(measuring_status(view.estimate)) + render_progress("", view.estimate)}
        view.measured, view.baseline = self.measured_runs(session, prep, settings)
        view.exports = export_trace(view.result, measurement=view.estimate, baseline=view.baseline)
        self.classroom.record_run(prep.text, view.result, view.estimate)
        notes = " ".join(n for n in (view.shared_note, sharing_note(shared) if shared else "") if n)
        # complete: the API's final value; it names the pair, which the free name fields may have changed
        update = self.finish_view(view, status=f"{final_status(view.estimate)} {ran_pair(view.result)} {notes}".strip(),
                                  headline=render_verdict(view.estimate))
        if view.baseline is not None:
            update["plot_throughput"] = throughput_figure(view.measured, view.baseline)
        yield update

    def stream_run(self, session: Session, prep: Prepared, settings: DecodeSettings):
        """Generator: one token update per step (capped at 1/token_interval_s per second). Identical deterministic
        requests of several sessions watch one run (classroom.py); Stop leaves it, ending it if nobody else
        watches."""
        gen = self.classroom.watch(prep, settings, lambda: self.engine.start(prep.target, prep.draft, prep.ids,
                                                                             settings))
        events, tokens, heavy = [], Throttle(self.token_interval_s), Throttle(self.heavy_interval_s)
        try:
            for event in gen:
                events.append(event)
                if session.stop_requested:
                    break
                if tokens.ready() or event.finished:
                    update = {"tokens": render_tokens(events, prep.text, streaming=True), "error": ""}
                    if heavy.ready():
                        update["cards"] = render_cards(live_metrics(events))
                        update["status"] = render_status(f"Step {event.index + 1}…") + render_progress(
                            f"Generating: step {event.index + 1} (the speedup is measured right after)")
                    yield update
        finally:
            gen.leave()
        # a Stop that lands after the last step has nothing left to stop: the run is complete
        finished = bool(events) and events[-1].finished
        session.last_run = RunView(prep.text, events, gen.result(), stopped=session.stop_requested and not finished,
                                   shared_note=shared_run_note(gen))
        return session.last_run

    def view_cards(self, view: RunView, note: str = "") -> str:
        if view.vllm:  # a run on a vLLM server: its cards (vllm_engine.py)
            from specdec.ui.vllm.engine import view_cards
            return view_cards(view, note)
        return render_cards(view.result.metrics, view.estimate, view.result.metrics.memory, note,
                            theory_note(view.events, view.result.settings.max_new_tokens), alpha_note(view.events),
                            engine=chosen_for(view.result.target_name),
                            auto=auto_card(getattr(view.result, "auto", None), view.events))

    def finish_view(self, view: RunView, note: str = "", status: str = "", headline: str = "") -> dict:
        """Everything about a finished (or stopped) run: tokens, cards, plots, steps table, exports; headline (HTML)
        follows the status line: the verdict, or the measurement's progress."""
        if not view.exports:
            view.exports = export_trace(view.result)
        return {
            "tokens": render_tokens(view.events, view.prompt, empty_note="(no tokens)"),
            "cards": self.view_cards(view, note),
            **run_figures(view.events, view.result, view.baseline, view.result.metrics.memory),
            "steps_table": steps_dataframe(view.events),
            "exports": view.exports,
            "status": render_status(status or "Run finished.") + headline,
            "error": "",
        }

    def stop(self, session: Session, run_id: str | None = None) -> dict:
        """Asks the run that Stop was pressed during (run_id; the run in progress when None) to end after its
        current step. It writes no output (only a toast): the run reports "Stopped" itself, and a reply
        arriving after that must not replace it."""
        if session.request_stop(run_id):
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
        if session.last_run.vllm:
            from specdec.ui.vllm.engine import inspector_note
            return inspector_note(event)
        return {"inspect_plot": inspector.inspect_figure(event, position),
                "inspect_details": inspector.inspect_details(event, position)}

    def first_interesting_step(self, session: Session) -> dict:
        """After a run: the inspector opens on the first rejected draft (else shows step 0, closed)."""
        events = session.last_run.events if session.last_run else []
        step = next((e.index for e in events if any(d.evaluated and not d.accepted for d in e.drafted)), None)
        if step is None:
            return self.show_step(session, 0)
        return {**self.show_step(session, step), "inspector_box": gr.update(open=True)}

    def step_by(self, session: Session, step, delta: int) -> dict:
        return self.show_step(session, int(step or 0) + delta)

    def select_token(self, session: Session, evt: gr.SelectData) -> dict:
        """A click on a token in the output opens the inspector on it."""
        step, position = evt.index if isinstance(evt.index, (list, tuple)) else (evt.index, None)
        return {**self.show_step(session, step, position), "inspector_box": gr.update(open=True)}


def measuring_status(est) -> str:
    return (f"Measuring the speedup: {est.describe()} so far (timed repeats of both decoders, apart from "
            f"the streamed run; Stop ends them)…")


def final_status(est) -> str:
    if est is None or est.repeats == 0:
        return "Stopped before the first timed repeat: no speedup measured."
    if est.state == "stopped":
        return f"Stopped the measurement: {est.describe()}."
    return f"Done. Speedup {est.describe()} (timed repeats of {est.new_tokens} tokens, apart from the streamed run)."


def ran_pair(result) -> str:
    """Which models a run used, by their loaded names."""
    draft = f"draft {result.draft_name}" if result.draft_name else "no draft"
    return f"Ran {result.target_name} with {draft}."


def relay(messages, wrap):
    """`yield from` that wraps each yielded message; returns the inner generator's return value."""
    while True:
        try:
            message = next(messages)
        except StopIteration as stop:
            return stop.value
        yield wrap(message)
