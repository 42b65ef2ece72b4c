"""What the tabs' callbacks share: the engine binding (LabCore: loading and preparing a request's prompt and models,
the measured speedup of a run's record, Stop), the error update every callback yields on a failure, the status lines
of a measurement, and measuring a sweep's points (the Sweep's and Why this speedup?'s). Plain functions and
generators of {output name: value} dicts, testable without a server (wiring.py binds them to components)."""
from __future__ import annotations

from dataclasses import dataclass

from specdec.measure.speedup import INTERACTIVE, SWEEP, Policy, cached
from specdec.measure.sweep import CONSTANT, SweepRunner
from specdec.models.prompt_clean import clean_prompt
from specdec.serving.request import RunRequest
from specdec.serving.run_record import RunRecord
from specdec.ui.classroom import Classroom
from specdec.ui.models import describe_error, load_target_and_drafts
from specdec.ui.names import explain_unknown_names, folders_allowed, offered_only_when_public
from specdec.ui.session import Session
from specdec.ui.views.render import render_error, render_status

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


def error_update(exc: BaseException) -> dict:
    """Shows the problem once, in the tab's error box beside the button that caused it (no toast: one message per
    bad input); every other output is left as it is."""
    return {"error": render_error(describe_error(exc)), "status": ""}


class LabCore:
    """What every tab's callbacks share, bound to an engine (the `specdec` package, or a fake in tests): loading
    and preparing a prompt, the shared speedup measurement, Stop. The Generate tab's Lab
    (tabs/generate/callbacks.py) adds its own callbacks; the app is built with that one."""

    def __init__(self, engine=None, *, device: str = "auto", allow_local_paths: bool | None = None,
                 token_interval_s: float = 0.02, heavy_interval_s: float = 0.25, settle_s: float = 0.3,
                 policy: Policy = INTERACTIVE, sweep_policy: Policy = SWEEP, classroom: Classroom | None = None):
        if engine is None:
            import specdec as engine
        self.engine, self.device = engine, device
        self.allow_local_paths = allow_local_paths  # None: as the deployment is (local_paths_allowed)
        self.load = offered_only_when_public(explain_unknown_names(self.load_model))
        self.token_interval_s, self.heavy_interval_s = token_interval_s, heavy_interval_s
        self.settle_s = settle_s  # pause before timed runs that follow a heavy UI update
        self.policy, self.sweep_policy = policy, sweep_policy  # when a measurement has repeated enough
        self.classroom = classroom or Classroom()  # what this process's users share (classroom.py)

    def load_model(self, name: str, **kwargs):
        """The engine's loader as the app calls it: the app's device and dtype unless the caller names its own (a draft
        model follows its target's), never remote code, folders on this machine only where allowed."""
        return self.engine.load_model(name, **{"device": self.device, "dtype": "auto", **kwargs,
                                               "trust_remote_code": False, "allow_local_paths": local_paths_allowed(self)})

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
            text = cleaned.text  # a note only when it changed something (nothing to say takes no room)
            note = f"Whitespace clean-up: {cleaned.summary()}." if cleaned.changed else ""
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

    def prepare_request(self, request: RunRequest, drafts: list[str] | None = None):
        """prepare() for a request: its prompt, clean-up, chat format, target, and its draft (or `drafts`)."""
        return (yield from self.prepare(request.prompt, request.clean_whitespace, request.target,
                                        drafts or [request.draft], chat=request.chat))

    def measure_shared(self, session: Session, prep: Prepared, record: RunRecord):
        """Generator of the measurement's Progress (classroom.py) of the run `record` shows: this configuration is
        measured once per app process and shared by every session (a private prompt's, once per session); a
        request for one being measured follows it; one waiting for the device says where it stands. Stop ends
        this request's part."""
        record.policy = self.policy
        yield from self.classroom.measure(self.engine, session, prep, record, self.policy,
                                          lambda: session.stop_requested)

    def measure(self, session: Session, prep: Prepared, record: RunRecord):
        """Generator of speedup Estimates of the run `record` shows (specdec.measure.speedup): a first figure
        after one timed pair, then tighter ones; the same measurement for every session (measure_shared), so
        Generate and Race show the same figure. Stop ends it after the current run."""
        for progress in self.measure_shared(session, prep, record):
            if progress.estimate is not None:
                yield progress.estimate

    def measured_runs(self, session: Session, prep: Prepared, record: RunRecord):
        """The latest timed pair's (speculative, target-only) RunResults, or (None, None)."""
        m = cached(session.measurements, prep.target, prep.draft, prep.ids, record.request.settings, record.learned)
        return (m.lead_result, m.follow_result) if m is not None else (None, None)

    def stop(self, session: Session, run_id: str | None = None) -> dict:
        """Asks the run that Stop was pressed during (run_id; the run in progress when None) to end after its
        current step. It writes no output (only a toast): the run reports "Stopped" itself, and a reply
        arriving after that must not replace it."""
        if session.request_stop(run_id):
            gr.Info("Stopping after the current step…", duration=3)
        return {}


def measuring_status(est) -> str:
    return (f"Measuring the speedup: {est.describe()} so far (timed repeats of both decoders, apart from "
            f"the streamed run; Stop ends them)…")


def final_status(est) -> str:
    if est is not None and est.fault is not None:
        return f"No speedup reported: {est.describe()}."
    if est is None or est.repeats == 0:
        return "Stopped before the first timed repeat: no speedup measured."
    if est.state == "stopped":
        return f"Stopped the measurement: {est.describe()}."
    return f"Done. Speedup {est.describe()} (timed repeats of {est.new_tokens} tokens, apart from the streamed run)."


def relay(messages, wrap):
    """`yield from` that wraps each yielded message; returns the inner generator's return value."""
    while True:
        try:
            message = next(messages)
        except StopIteration as stop:
            return stop.value
        yield wrap(message)


def measure_points(runner: SweepRunner, points, session: Session, progress):
    """Generator: warm-up, then every point; the status line and the progress bar say the same thing.
    Only these light updates go out while measuring (no figures): no drawing competes with the timing."""
    desc = "Warming up (short untimed runs)…"
    yield {"status": render_status(desc), "error": ""}
    progress(0.0, desc=desc)  # after the yield: an update clears the progress bar until the next call
    runner.warm_up()
    rows = []
    for i, point in enumerate(points):
        if session.stop_requested:
            break
        schedule = "" if point.schedule == CONSTANT else f", {point.schedule}"
        desc = (f"Measuring point {i + 1} of {len(points)}: {point.draft}{schedule}, K={point.k}, "
                f"T={point.temperature:g}")
        yield {"status": render_status(desc + "…")}
        progress((i, len(points)), desc=desc, unit="points measured")
        row = runner.measure(point)
        if row is None:
            break
        rows.append(row)
    return rows


def local_paths_allowed(lab: LabCore) -> bool:
    """Whether this Lab loads models from folders on this machine (names.folders_allowed of its allow_local_paths)."""
    return folders_allowed(lab.allow_local_paths)
