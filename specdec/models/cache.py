"""The loaded-model cache: bounded in bytes, least recently used models released first, and one load
per model however many callers ask for it at once (the others wait for that load and share it).

A released model is only dropped from the cache: a run that still holds it finishes normally, and its
memory returns once nothing refers to it. Loads of different models run in parallel; each reserves
its estimated size first, so two loads cannot both squeeze into the same free space.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Hashable, Optional


@dataclass
class _Pending:
    """A load in progress: waiters block on `done` and then share its value or its error."""

    done: threading.Event = field(default_factory=threading.Event)
    value: object = None
    error: Optional[BaseException] = None


class ModelCache:
    def __init__(self, budget: Optional[int] = None, release: Callable[[object], None] = lambda model: None):
        self.budget = budget  # bytes; None: unbounded
        self.release = release  # called (outside the lock) for every model dropped from the cache
        self.loads = 0  # loads that ran (a shared load counts once)
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._pending: dict[Hashable, _Pending] = {}
        self._reserved: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    # --- what is held ---------------------------------------------------------------------------
    @property
    def used(self) -> int:
        """Bytes of the models held (reservations of loads in progress not included)."""
        with self._lock:
            return sum(size for _, size in self._entries.values())

    def keys(self) -> list:
        """Held keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._entries

    def clear(self) -> None:
        with self._lock:
            dropped = [model for model, _ in self._entries.values()]
            self._entries.clear()
        for model in dropped:
            self.release(model)

    # --- getting a model ------------------------------------------------------------------------
    def get_or_load(self, key: Hashable, load: Callable[[], object], size: Callable[[object], int],
                    estimate: Optional[int] = None, admit: Callable[[Optional[int]], None] = lambda budget: None):
        """The cached model for key, or load() it once: concurrent callers of the same key wait for
        the one load. Before loading, least recently used models are released until the estimate fits
        the budget, then admit(budget) may refuse (raise) the load; afterwards the cache is trimmed
        back to the budget (never releasing the model just loaded)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
            pending = self._pending.get(key)
            owner = pending is None
            if owner:
                pending = self._pending[key] = _Pending()
        if not owner:
            return self._wait(pending)
        try:
            self._release(self._make_room(key, estimate or 0))
            admit(self.budget)
            model = load()
            with self._lock:
                self.loads += 1
                self._entries[key] = (model, int(size(model)))
                self._reserved.pop(key, None)
                dropped = self._evict_over_budget(keep=key)
            self._release(dropped)
            pending.value = model
            return model
        except BaseException as exc:
            pending.error = exc
            raise
        finally:
            with self._lock:
                self._pending.pop(key, None)
                self._reserved.pop(key, None)
            pending.done.set()

    @staticmethod
    def _wait(pending: _Pending):
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.value

    def _make_room(self, key, estimate: int) -> list:
        """Reserves `estimate` bytes for key, dropping least recently used models until it fits."""
        with self._lock:
            self._reserved[key] = estimate
            dropped = []
            while self.budget is not None and self._entries and self._load_total() > self.budget:
                _, (model, _) = self._entries.popitem(last=False)
                dropped.append(model)
            return dropped

    def _evict_over_budget(self, keep) -> list:
        dropped = []
        while self.budget is not None and self._load_total() > self.budget:
            victim = next((k for k in self._entries if k != keep), None)
            if victim is None:
                break
            dropped.append(self._entries.pop(victim)[0])
        return dropped

    def _load_total(self) -> int:
        return sum(size for _, size in self._entries.values()) + sum(self._reserved.values())

    def _release(self, models: list) -> None:
        for model in models:
            self.release(model)
