"""Measure once, share with everyone: one speedup measurement per configuration per app process.

A configuration (models, drafter, K, its schedule, warping, seed, max new tokens, the prompt's tokens, device,
dtype: speedup.config_key) is measured once and every session's request for it shares that Measurement:

- single flight: a request for a configuration being measured follows that measurement (it sees each new
  estimate) instead of starting a second one; if the request measuring it is stopped, a follower carries on;
- one measurement at a time: measurements queue first come, first served, so each finishes as soon as it can
  (pairs of several measurements interleaved would finish all of them late); a queued request knows its
  position and an estimate of its wait;
- privacy: a private configuration's key carries its session's scope (key()), so it is measured for that user
  only and never shown to anyone else; the caller decides which are private (ui/classroom.py: a prompt that is not
  one of the app's own);
- each shared entry counts the runs it served and when it was measured, which the figure then says.

Plain Python: no gradio, no torch; the measuring itself is a callable handed in (speedup.measure_speedup).
"""
from __future__ import annotations

import dataclasses
import statistics
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterator, Optional

from specdec.measure.speedup import Estimate, Measurement

DEFAULT_MEASURE_S = 20.0  # the wait estimate for a measurement before any has finished here
CAPACITY = 256  # configurations kept (oldest idle ones dropped first)
POLL_S = 1.0  # how often a waiting request reports its position


def normal_text(text: str) -> str:
    """A prompt compared for privacy: whitespace runs collapsed, ends stripped (the clean-up may change them)."""
    return " ".join((text or "").split())


@dataclass
class Shared:
    """One configuration's measurement and what it served."""

    key: Hashable
    measurement: Measurement
    private: bool
    runs: int = 0  # requests that got (or are getting) this figure
    started_at: Optional[float] = None  # wall clock of the first timed pair
    measured_at: Optional[float] = None  # wall clock of the latest timed pair
    version: int = 0  # bumped after every pair
    driver: Optional[int] = None  # the thread measuring it now
    queued: bool = False  # waiting for its turn to measure

    @property
    def busy(self) -> bool:
        return self.driver is not None or self.queued


@dataclass(frozen=True)
class Progress:
    """What a request sees. role: measuring (its thread times the pairs), following (another request's
    measurement), queued (other measurements go first: position counts them, wait_s estimates their time
    left), reused (already measured)."""

    estimate: Optional[Estimate]
    shared: Shared
    role: str
    position: int = 0
    wait_s: float = 0.0


@dataclass
class _Queue:
    order: list = field(default_factory=list)  # keys waiting to measure, the head measuring
    started: dict = field(default_factory=dict)  # key -> monotonic start of its measuring
    durations: list = field(default_factory=list)  # the last measurements' lengths (s)


class SharedMeasurements:
    """The process's measurements (see the module's docstring)."""

    def __init__(self, capacity: int = CAPACITY, wall_clock: Callable[[], float] = time.time,
                 clock: Callable[[], float] = time.monotonic):
        self.capacity, self.wall_clock, self.clock = capacity, wall_clock, clock
        self._entries: OrderedDict[Hashable, Shared] = OrderedDict()
        self._cond = threading.Condition()
        self._queue = _Queue()

    # --- keys and privacy ---------------------------------------------------------------------------------
    def key(self, config_key: Hashable, scope: Optional[str]) -> tuple:
        """The entry's key: the configuration, and for a private one the scope (a session's) it belongs to."""
        return ("private", scope, config_key) if scope is not None else ("shared", config_key)

    def entry(self, key: Hashable) -> Shared:
        """The entry for `key`, made when new (counts no run)."""
        with self._cond:
            return self._get(key)

    def _get(self, key: Hashable) -> Shared:
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = Shared(key, Measurement(key=key), private=key[0] == "private")
            self._drop_old()
        self._entries.move_to_end(key)
        return found

    def _drop_old(self) -> None:
        for key in [k for k, e in self._entries.items() if not e.busy][: max(0, len(self._entries) - self.capacity)]:
            del self._entries[key]

    # --- measuring ----------------------------------------------------------------------------------------
    def follow(self, key: Hashable, measure: Callable[[Measurement], Iterator[Estimate]],
               needs_more: Callable[[Measurement], bool], should_stop: Callable[[], bool] = lambda: False
               ) -> Iterator[Progress]:
        """Generator of Progress for one request: reuses a finished measurement, follows one in progress, or
        queues and measures (measure(m) yields an Estimate per pair). The last Progress is final: its estimate
        is final (stopped when this request was stopped while following or queued; None if before any pair)."""
        with self._cond:
            entry = self._get(key)
            entry.runs += 1
        role = "reused"
        while True:
            update = final = None
            with self._cond:
                m = entry.measurement
                if not needs_more(m):
                    action, final = "final", Progress(m.estimate(), entry, role)
                elif should_stop():
                    action, final = "final", Progress(_stopped(m.estimate() if m.repeats else None), entry, role)
                elif not entry.busy:
                    action, entry.queued = "turn", True
                    self._queue.order.append(key)
                else:  # another request measures it, or waits for its turn: follow it
                    action, role = "follow", "following"
                    update = self._wait_for_change(entry)
            if action == "final":
                yield final
                return
            if action == "turn":
                yield from self._take_turn(entry, measure, should_stop)
                return
            if update is not None:
                yield update

    def _wait_for_change(self, entry: Shared) -> Optional[Progress]:
        """(Holding the lock.) Waits up to POLL_S for the entry's next pair: its estimate, or (no new pair)
        where the entry stands in the queue; None once the entry is free or finished (the caller decides)."""
        version = entry.version
        self._cond.wait(POLL_S)
        if entry.version != version:
            estimate = entry.measurement.estimate()
            return None if estimate.final else Progress(estimate, entry, "following")
        if not entry.busy:
            return None
        position, wait_s = self._position(entry.key)
        return Progress(entry.measurement.estimate() if entry.measurement.repeats else None, entry,
                        "queued" if entry.queued else "following", position, wait_s)

    def _take_turn(self, entry: Shared, measure, should_stop) -> Iterator[Progress]:
        """Waits for its turn (reporting its position), then measures; a request stopped while queued leaves."""
        while True:
            with self._cond:
                mine = self._queue.order[0] == entry.key
                stopped = not mine and should_stop()
                if mine:
                    entry.queued, entry.driver = False, threading.get_ident()
                    self._queue.started[entry.key] = self.clock()
                elif stopped:
                    self._queue.order.remove(entry.key)
                    entry.queued = False
                    self._cond.notify_all()
                else:
                    position, wait_s = self._position(entry.key)
            if mine:
                break
            if stopped:
                yield Progress(_stopped(entry.measurement.estimate() if entry.measurement.repeats else None),
                               entry, "queued")
                return
            yield Progress(None, entry, "queued", position, wait_s)
            with self._cond:
                if self._queue.order[0] != entry.key:
                    self._cond.wait(POLL_S)
        try:
            for estimate in measure(entry.measurement):
                with self._cond:
                    now = self.wall_clock()
                    entry.started_at = entry.started_at or now
                    entry.measured_at, entry.version = now, entry.version + 1
                    self._cond.notify_all()
                yield Progress(estimate, entry, "measuring")
        finally:
            with self._cond:
                entry.driver = None
                self._queue.order.remove(entry.key)
                started = self._queue.started.pop(entry.key, None)
                if started is not None and entry.measurement.state in ("done", "budget"):
                    self._queue.durations = (self._queue.durations + [self.clock() - started])[-20:]
                self._cond.notify_all()

    def _position(self, key: Hashable) -> tuple[int, float]:
        """(Holding the lock.) Measurements ahead of `key`'s and an estimate of the seconds they need."""
        order = self._queue.order
        ahead = order[: order.index(key)] if key in order else list(order)
        typical = statistics.median(self._queue.durations) if self._queue.durations else DEFAULT_MEASURE_S
        wait = 0.0
        for other in ahead:
            started = self._queue.started.get(other)
            wait += max(1.0, typical - (self.clock() - started)) if started is not None else typical
        return len(ahead), wait


def _stopped(estimate: Optional[Estimate]) -> Optional[Estimate]:
    return dataclasses.replace(estimate, state="stopped") if estimate is not None else None


def sharing_note(entry: Shared, now: Optional[float] = None) -> str:
    """One sentence on where the figure comes from: how many runs it served and when it was measured."""
    if entry.measured_at is None:
        return ""
    when = time.strftime("%H:%M:%S UTC", time.gmtime(entry.measured_at))
    if entry.private:
        return f"Measured for you only (your own prompt), last timed pair at {when}."
    runs = f"{entry.runs} runs" if entry.runs != 1 else "1 run"
    return f"Measured once on this app and shared: {runs} so far got this figure; last timed pair at {when}."
