"""One run for identical requests: when several users ask for the same deterministic run (greedy, or sampled with
the same seed; same models, prompt and settings), its trace is the same for all of them, so one run is made and
its step events go to every one of them as they come.

The viewers drive the run together: whichever needs the next event first computes it (one at a time), the others
read it from the shared list; a viewer who joins late reads the events so far at once. A viewer who leaves (Stop)
stops the run only when nobody else watches it; otherwise the run goes on for the others. A finished run is kept
for `keep_s` seconds, so a request that arrives just after it ends gets it at once. A request with no key (a
sampled run without a seed, or a private prompt) gets a run of its own.

Plain Python: no gradio, no torch; a run is anything iterable with close() and result() (engine.Generation).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Optional

KEEP_S = 30.0


@dataclass
class SharedRun:
    key: Optional[Hashable]
    run: Any  # the engine's Generation
    started_at: float  # wall clock
    events: list = field(default_factory=list)
    viewers: int = 0  # watching now
    served: int = 0  # every request that got this run
    driving: bool = False  # a viewer's thread computes the next step now
    done: bool = False
    closed: bool = False  # stopped before its end (by its last viewer)
    finished_at: Optional[float] = None
    error: Optional[BaseException] = None
    _result: Any = None


class Viewer:
    """One request's view of a shared run: iterate for its step events; leave() on Stop; result() at the end."""

    def __init__(self, runs: "SharedRuns", shared: SharedRun):
        self.runs, self.shared, self.seen, self.left = runs, shared, 0, False

    def __iter__(self):
        return self

    def __next__(self):
        event = self.runs._next(self.shared, self.seen)
        self.seen += 1
        return event

    @property
    def events(self) -> list:
        """The events this viewer has seen."""
        return self.shared.events[: self.seen]

    def leave(self) -> None:
        """This viewer stops watching (Stop): the run is closed when nobody else watches it."""
        if not self.left:
            self.left = True
            self.runs._leave(self.shared)

    def result(self):
        """The run's result: a closed run's tokens so far, else (waiting for the others' run to end) the whole
        run's."""
        shared = self.shared
        if not shared.closed:
            for _ in Viewer(self.runs, shared):
                pass
        with self.runs._cond:
            if shared._result is None:
                shared._result = shared.run.result()
            return shared._result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.leave()


class SharedRuns:
    def __init__(self, keep_s: float = KEEP_S, clock: Callable[[], float] = time.time):
        self.keep_s, self.clock = keep_s, clock
        self._runs: dict[Hashable, SharedRun] = {}
        self._cond = threading.Condition()

    def join(self, key: Optional[Hashable], start: Callable[[], Any]) -> Viewer:
        """A viewer of the run for `key`: the one in progress (or just finished), else a new one from start()."""
        with self._cond:
            self._forget_old()
            shared = self._runs.get(key) if key is not None else None
            if shared is None or shared.closed or shared.error is not None:
                shared = SharedRun(key, start(), self.clock())
                if key is not None:
                    self._runs[key] = shared
            shared.viewers += 1
            shared.served += 1
            return Viewer(self, shared)

    def _forget_old(self) -> None:
        now = self.clock()
        for key in [k for k, r in self._runs.items() if r.done and r.finished_at is not None
                    and now - r.finished_at > self.keep_s]:
            del self._runs[key]

    def _next(self, shared: SharedRun, index: int):
        while True:
            with self._cond:
                if index < len(shared.events):
                    return shared.events[index]
                if shared.error is not None:
                    raise shared.error
                if shared.done:
                    raise StopIteration
                if shared.driving:
                    self._cond.wait()
                    continue
                shared.driving = True
            event, ended, error = None, False, None
            try:
                event = next(shared.run)
            except StopIteration:
                ended = True
            except Exception as exc:  # noqa: BLE001 (every viewer gets it)
                error = exc
            with self._cond:
                shared.driving = False
                if event is not None:
                    shared.events.append(event)
                    ended = bool(getattr(event, "finished", False))
                if error is not None:
                    shared.error = error
                    self._runs.pop(shared.key, None)
                if ended or error is not None:
                    shared.done, shared.finished_at = True, self.clock()
                    if error is None:
                        shared.run.close()  # a finished run lets go of what it holds
                self._cond.notify_all()

    def _leave(self, shared: SharedRun) -> None:
        with self._cond:
            shared.viewers -= 1
            if shared.viewers > 0 or shared.done:
                return
            while shared.driving:
                self._cond.wait()
            shared.run.close()
            shared.closed = shared.done = True
            shared.finished_at = self.clock()
            if self._runs.get(shared.key) is shared:
                del self._runs[shared.key]
            self._cond.notify_all()
