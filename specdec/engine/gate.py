"""The compute gate: many users' runs share one device, and a timed pair never overlaps other compute.

Every decoding step of a run (Generation's loop, prefill included) passes through the process's gate, one step at
a time: streamed runs of several users interleave step by step (their models and drafters are never computing
at once, so no runner or kernel is shared between threads mid-step; each request has its own drafter and each
run its own caches). A timed pair (speedup.measure) takes the gate exclusively for one pair:
no other step runs while it is timed, and the runs inside the pair (the same thread) pass straight through.

Who goes first: a step waits only for a pair already timing (at most one pair), so a user sees tokens soon even
while others' measurements run. A pair waits until no streamed run is in progress, so streamed runs are not
slowed by pairs between their steps, but never longer than `patience_s`: then it takes the gate between two
steps, so a long stream of others' runs cannot starve a measurement. Pairs queue among themselves first come,
first served.

Plain Python (threading only): no torch, no gradio; one gate per process (GATE).
"""
from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

PATIENCE_S = 3.0  # the longest a waiting pair lets streamed runs go on before it takes the gate between steps


@dataclass
class Waited:
    """How long a step waited at the gate (its run leaves that out of its engine time)."""

    s: float = 0.0


class ComputeGate:
    """Steps one at a time, pairs alone (see the module's docstring)."""

    def __init__(self, patience_s: float = PATIENCE_S, clock: Callable[[], float] = time.monotonic):
        self.patience_s, self.clock = patience_s, clock
        self._cond = threading.Condition()
        self._owner: Optional[int] = None  # the thread timing a pair
        self._depth = 0  # nested exclusive() calls of the owner
        self._steps = 0  # steps computing now
        self._streams = 0  # runs in progress outside a pair
        self._tickets: list[int] = []  # pairs waiting, first come first served
        self._impatient = 0  # waiting pairs past their patience: new steps wait for them
        self._next_ticket = 0

    def _mine(self) -> bool:
        return self._owner == threading.get_ident()

    @contextlib.contextmanager
    def step(self) -> Iterator[Waited]:
        """One decoding step: waits while another thread times a pair or computes a step; yields how long it
        waited."""
        waited = Waited()
        with self._cond:
            if self._mine():
                yield waited
                return
            start = self.clock()
            while self._owner is not None or self._steps or self._impatient:
                self._cond.wait()
            waited.s = self.clock() - start
            self._steps += 1
        try:
            yield waited
        finally:
            with self._cond:
                self._steps -= 1
                self._cond.notify_all()

    def stream(self) -> "Stream":
        """A run in progress (from its first step to its end): pairs wait for it, up to patience_s. A run inside
        a pair (the owner's thread) is part of the pair and does not count. Its end() may come before the
        context's exit (a run ends with its last event, whether or not its consumer asks for more)."""
        with self._cond:
            counted = not self._mine()
            self._streams += counted
        return Stream(self, counted)

    def _end_stream(self) -> None:
        with self._cond:
            self._streams -= 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """One timed pair: waits for its turn among pairs, for the steps computing now to end, and for the
        streamed runs in progress (at most patience_s); then nothing else computes until it ends."""
        with self._cond:
            if self._mine():
                self._depth += 1
            else:
                ticket, self._next_ticket = self._next_ticket, self._next_ticket + 1
                self._tickets.append(ticket)
                since, impatient = self.clock(), False
                while not self._may_enter(ticket, self.clock() - since):
                    if not impatient and self.clock() - since >= self.patience_s:
                        impatient, self._impatient = True, self._impatient + 1  # steps now let it in
                    remaining = self.patience_s - (self.clock() - since)
                    self._cond.wait(timeout=max(0.01, remaining) if self._streams and not impatient else None)
                self._impatient -= impatient
                self._tickets.remove(ticket)
                self._owner, self._depth = threading.get_ident(), 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                self._cond.notify_all()

    def _may_enter(self, ticket: int, waited_s: float) -> bool:
        return (self._owner is None and self._steps == 0 and self._tickets[0] == ticket
                and (self._streams == 0 or waited_s >= self.patience_s))

    def describe(self) -> dict:
        """What the gate holds now: {"timing": a pair is timed, "steps", "streams", "pairs_waiting"}."""
        with self._cond:
            return {"timing": self._owner is not None, "steps": self._steps, "streams": self._streams,
                    "pairs_waiting": len(self._tickets)}


class Stream:
    """A run's place among the streams (ComputeGate.stream); end() is idempotent."""

    def __init__(self, gate: ComputeGate, counted: bool):
        self.gate, self.open = gate, counted

    def end(self) -> None:
        if self.open:
            self.open = False
            self.gate._end_stream()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.end()


GATE = ComputeGate()  # the process's one device
