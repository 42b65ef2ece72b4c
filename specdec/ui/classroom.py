"""What one app process shares between its users, for a class on one Space: the measurements (measured once per
configuration), the streamed runs (one run for identical deterministic requests) and the class results board.

The engine-free parts live in specdec/serving (shared_measurements, shared_runs, class_board); this module
decides, for one request, what it may share: a configuration whose prompt is one of the app's own (an example or
a tour exercise) is shared; a user's own prompt is private (measured for that session only, never on the board
by its text, never sharing its run). It also words what the view says about sharing.
"""
from __future__ import annotations

import time
import uuid
from typing import Iterator, Optional

from specdec.engine.events import DecodeSettings
from specdec.measure.speedup import Policy, ShownRun, config_key, engine_contestants, measure
from specdec.measure.sweep import remember
from specdec.ui.choices import offered_names
from specdec.serving.class_board import PRIVATE_LABEL, BoardRun, ClassBoard, SweepRecord, board_path
from specdec.serving.run_record import RunRecord
from specdec.serving.shared_measurements import Progress, SharedMeasurements, normal_text
from specdec.serving.shared_runs import SharedRuns, Viewer
from specdec.ui.exercises import exercise_label, find_exercise


def session_scope(session) -> str:
    """The session's private scope (made at its first request: gr.State copies one Session per browser)."""
    if not session.scope:
        session.scope = uuid.uuid4().hex
    return session.scope


OWN_MODEL = "own model"  # the board's name for a draft the user typed (a Hub id or a folder): never shown to others


def shown_draft(name: str) -> str:
    """A draft's name as everyone may see it: one the app offers, or "none"; a name the user typed is OWN_MODEL."""
    return name if name == "none" or name in offered_names() else OWN_MODEL


def config_label(record: RunRecord) -> str:
    """A run's configuration as it ran, in a few words, never its prompt nor a typed model name:
    'smollm2-135m-eagle3 · K = 4 · T=0', 'auto → smollm2-135m-eagle3 · K 1–4 (auto schedule) · T=0'."""
    draft = shown_draft(record.draft or "none")
    if record.drafted_by not in (None, record.draft):
        draft = f"{draft} → {shown_draft(record.drafted_by)}"
    return f"{draft} · {record.k_words()} · T={record.settings.temperature:g}"


class Classroom:
    def __init__(self, board: Optional[ClassBoard] = None):
        self.measurements = SharedMeasurements()
        self.runs = SharedRuns()
        self.board = board if board is not None else ClassBoard(board_path())
        self.labels: dict[str, str] = {}  # the app's own prompts (normalised) -> their example or exercise name

    def publish(self, prompts: dict[str, str]) -> None:
        """The app's own prompts, {text: label}: configurations with these prompts are shared."""
        for text, label in prompts.items():
            self.labels.setdefault(normal_text(text), label)

    def label(self, text: str) -> Optional[str]:
        """The example or exercise a prompt is, or None for a user's own (private) prompt."""
        return self.labels.get(normal_text(text))

    # --- runs and measurements ------------------------------------------------------------------------
    def run_key(self, prep, settings: DecodeSettings) -> Optional[tuple]:
        """The key identical requests share a streamed run under; None (a run of its own) for a private prompt,
        a sampled run without a seed (its trace differs every time), or a drafter that learns across requests
        (its drafts, rejected ones shown too, come from its own session's earlier outputs)."""
        if (self.label(prep.text) is None or (settings.mode == "sampling" and settings.seed is None)
                or getattr(prep.draft, "learns_across_requests", False)):
            return None
        return config_key(prep.target, prep.draft, prep.ids, settings)

    def watch(self, prep, settings: DecodeSettings, start) -> Viewer:
        return self.runs.join(self.run_key(prep, settings), start)

    def measure(self, engine, session, prep, record: RunRecord, policy: Policy, should_stop) -> Iterator[Progress]:
        """Progress of the shared (or, for a private prompt, the session's) measurement of the run `record` shows:
        its timed repeats run the request's settings, a drafter that learns across requests from what it had learnt
        when the run started, and a figure the run contradicts is a fault (measure.speedup.ShownRun)."""
        settings, learned = record.request.settings, record.learned
        ck = config_key(prep.target, prep.draft, prep.ids, settings, learned)
        scope = None if self.label(prep.text) is not None else session_scope(session)
        key = self.measurements.key(ck, scope)
        entry = self.measurements.entry(key)
        remember(session.measurements, ck, entry.measurement)  # the session's report lists it
        lead, follow = engine_contestants(engine, prep.target, prep.draft, prep.ids, settings, learned)
        shown = ShownRun.of(record.result)
        yield from self.measurements.follow(
            key, lambda m: measure(lead, follow, policy, measurement=m, should_stop=should_stop, shown=shown),
            policy.needs_more, should_stop)

    # --- the board -------------------------------------------------------------------------------------
    def filed_under(self, prompt_text: str, exercise_key: Optional[str]) -> str:
        """The board's row for a run: the exercise whose own run it is, else the app's prompt it used, else the
        private row (a user's own prompt is never named)."""
        exercise = find_exercise(exercise_key)
        label = self.label(prompt_text)
        if exercise is not None and label is not None:
            return exercise_label(exercise)
        return label or PRIVATE_LABEL

    def record_run(self, record: RunRecord) -> None:
        """A finished run on the board, from its record: where it is filed, its configuration as it ran and its
        numbers (its measured speedup only when the measurement finished without a fault)."""
        metrics = record.result.metrics
        self.board.record_run(BoardRun(
            self.filed_under(record.prompt_text, record.exercise), config_label(record), metrics.acceptance_rate,
            metrics.tokens_per_forward, record.estimate.ratio if record.measured_ok else None, time.time()))

    def record_sweep(self, prompt_text: str, rows, exercise_key: Optional[str] = None) -> None:
        """A sweep's measured speedups by K, per drafter and temperature, pooled on the board."""
        groups: dict[tuple, dict] = {}
        for row in rows:
            if row.speedup is not None:
                groups.setdefault((shown_draft(row.draft), row.temperature), {})[int(row.k)] = row.speedup
        label = self.filed_under(prompt_text, exercise_key)
        for (draft, temperature), speedups in groups.items():
            self.board.record_sweep(SweepRecord(label, f"{draft} · sweep of K · T={temperature:g}", speedups,
                                                time.time()))


def shared_run_note(viewer: Viewer) -> str:
    """What the view says of a run made for several students, and when it was made."""
    served = viewer.shared.served
    if served <= 1:
        return ""
    when = time.strftime("%H:%M:%S UTC", time.gmtime(viewer.shared.started_at))
    return (f"This run was made once, at {when}, for {served} identical requests (the same deterministic "
            f"settings give the same tokens).")


def queue_note(progress: Progress) -> str:
    """Where a request waiting for the device stands."""
    ahead = progress.position
    measurements = "measurement" if ahead == 1 else "measurements"
    return (f"Waiting for the device: {ahead} {measurements} of other configurations ahead of yours "
            f"(about {max(1, round(progress.wait_s))} s). Timed pairs run one at a time so that no timing "
            f"overlaps other work.")
