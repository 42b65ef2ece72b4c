"""Per-browser-session state (held in gr.State, deep-copied per session: no user's run is global)."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class RunView:
    """A finished (or stopped) run, kept for the inspector, step-through and export."""

    prompt: str
    events: list
    result: Any  # the engine's RunResult (for a stopped run: what was produced until Stop)
    baseline: Any = None  # a measured target-only RunResult (the latest timed pair's)
    measured: Any = None  # a measured speculative RunResult (the same pair's)
    estimate: Any = None  # specdec.measurement.Estimate of the speedup, once measuring has begun
    exports: list = field(default_factory=list)
    stopped: bool = False


@dataclass
class Session:
    last_run: Optional[RunView] = None
    measurements: dict = field(default_factory=dict)  # measurement.config_key -> Measurement (this session's)
    stop_requested: bool = False
    running: bool = False
    sweep_rows: list = field(default_factory=list)

    @contextlib.contextmanager
    def timed_run(self):
        """Marks a Generate/Race/Sweep run as in progress; a Stop from before it started is forgotten."""
        self.stop_requested, self.running = False, True
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
