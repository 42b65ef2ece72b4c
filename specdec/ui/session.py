"""Per-browser-session state (held in gr.State, deep-copied per session: no user's run is global): the record of
the last run (specdec/serving/run_record.RunRecord, what every view of it renders from), the measurements, the
sweep, the engine choice and the run in progress."""
from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from specdec.serving.run_record import RunRecord


@dataclass
class Session:
    last_run: Optional["RunRecord"] = None  # the last run's record (Generate's, on the lab or a vLLM server)
    measurements: dict = field(default_factory=dict)  # config_key -> Measurement (shared ones too: classroom.py)
    scope: str = ""  # this session's private scope for its own prompts' measurements (classroom.session_scope)
    vllm: Any = None  # vllm_engine.VllmChoice when the sidebar's engine is "vLLM server"
    engine_fields: dict = field(default_factory=dict)  # the sidebar's engine fields as last changed (record_field)
    running: bool = False
    sweep_rows: list = field(default_factory=list)
    load_shown: Any = None  # the load run the Under load tab drew last (the tour's answer quotes its crossover)
    run_id: str = ""  # the timed run in progress, or the last one
    stop_for: Optional[str] = None  # the id of the run a Stop was pressed during
    next_run_id: Optional[str] = None  # the id the browser made for the run about to start (layout.tied_to_run)
    settings_chosen: bool = False  # a link or an exercise set the page's settings: the measured default leaves them

    @property
    def stop_requested(self) -> bool:
        """True once a Stop for the run in progress (or the last one) has arrived."""
        return self.stop_for is not None and self.stop_for == self.run_id

    @stop_requested.setter
    def stop_requested(self, value: bool) -> None:  # the time budget stops the run in progress, as Stop does
        self.stop_for = self.run_id if value else None

    def request_stop(self, run_id: str | None = None) -> bool:
        """A Stop pressed during run `run_id` (the browser sends the id of the run it showed); without an id
        (an API client), the run in progress. A Stop for a run still waiting in the queue stops it when it
        starts; one for an earlier run, arriving after a new run started, stops nothing. True when it stops
        the run in progress."""
        run_id = run_id or (self.run_id if self.running else None)
        if run_id is None or (run_id == self.run_id and not self.running):
            return False  # nothing runs, or that run is over
        self.stop_for = run_id
        return self.running and run_id == self.run_id

    @contextlib.contextmanager
    def timed_run(self):
        """Marks a Generate/Race/Sweep run as in progress under its id (the browser's, else a fresh one); a
        Stop for another run is forgotten, one pressed for this run while it was queued holds."""
        self.run_id, self.next_run_id = self.next_run_id or uuid.uuid4().hex, None
        if self.stop_for != self.run_id:
            self.stop_for = None
        self.running = True
        try:
            yield self
        finally:
            self.running = False

    def event(self, step: int):
        """The step event of the last run, clamped to the existing range (None without a run)."""
        if self.last_run is None or not self.last_run.events:
            return None
        events = self.last_run.events
        return events[max(0, min(int(step or 0), len(events) - 1))]
