"""The class results board: every run made on this app process, pooled per exercise (or example) and
configuration, for a teacher's projector.

A row pools the runs of one (exercise, configuration): how many runs, their mean acceptance rate and tokens per
target forward, the measured speedup (the median of the runs' figures; runs of one configuration share one
measurement, so it is usually that figure), and, from the sweeps pooled over every student, the best K (the K
with the highest median measured speedup across sweeps). Runs on a user's own prompt are private: they pool under
one row, "Own prompts", with their numbers only, never their text or their configuration's prompt.

Kept in memory, and in a JSON file when a path is given (a Space's persistent storage, /data); the operator can
reset it. Plain Python: no gradio.
"""
from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

PRIVATE_LABEL = "Own prompts (numbers only)"
PERSISTENT_DIR = Path("/data")  # a Hugging Face Space's persistent storage, when the Space has it
FILE_NAME = "specdec-class-board.json"


@dataclass(frozen=True)
class BoardRun:
    label: str  # the exercise or example, or PRIVATE_LABEL
    config: str  # e.g. "smollm2-135m-eagle3 · K=4 · T=0" (never a prompt)
    acceptance_rate: Optional[float]
    tokens_per_forward: Optional[float]
    speedup: Optional[float]  # the measured median ratio (None: not measured, e.g. stopped)
    at: float  # wall clock


@dataclass(frozen=True)
class SweepRecord:
    label: str
    config: str  # the sweep's drafter and temperature
    speedups: dict  # K -> measured speedup
    at: float


@dataclass(frozen=True)
class BoardRow:
    label: str
    config: str
    runs: int
    acceptance_rate: Optional[float]
    tokens_per_forward: Optional[float]
    speedup: Optional[float]
    measured_runs: int  # runs with a measured speedup
    best_k: Optional[int]
    best_k_speedup: Optional[float]
    sweeps: int


def _mean(values) -> Optional[float]:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _median(values) -> Optional[float]:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def best_k(sweeps: list[SweepRecord]) -> tuple[Optional[int], Optional[float]]:
    """The K with the highest median measured speedup over the pooled sweeps, and that median."""
    by_k: dict[int, list] = defaultdict(list)
    for sweep in sweeps:
        for k, speedup in sweep.speedups.items():
            if speedup is not None:
                by_k[int(k)].append(speedup)
    if not by_k:
        return None, None
    k = max(by_k, key=lambda k: (statistics.median(by_k[k]), -k))
    return k, statistics.median(by_k[k])


@dataclass
class ClassBoard:
    path: Optional[Path] = None  # where it is kept across restarts (None: memory only)
    runs: list = field(default_factory=list)
    sweeps: list = field(default_factory=list)
    reset_at: Optional[float] = None

    def __post_init__(self):
        self._lock = threading.Lock()
        if self.path is not None and Path(self.path).exists():
            self._load()

    def record_run(self, record: BoardRun) -> None:
        with self._lock:
            self.runs.append(record)
            self._save()

    def record_sweep(self, record: SweepRecord) -> None:
        with self._lock:
            self.sweeps.append(record)
            self._save()

    def reset(self) -> None:
        with self._lock:
            self.runs, self.sweeps, self.reset_at = [], [], time.time()
            self._save()

    def rows(self) -> list[BoardRow]:
        """One row per (label, configuration), in the order first seen; sweeps add their best K to the row of
        the same label and configuration (or a row of their own)."""
        with self._lock:
            runs, sweeps = list(self.runs), list(self.sweeps)
        groups: dict[tuple, list] = {}
        for run in runs:
            groups.setdefault((run.label, run.config), []).append(run)
        swept: dict[tuple, list] = defaultdict(list)
        for sweep in sweeps:
            swept[(sweep.label, sweep.config)].append(sweep)
            groups.setdefault((sweep.label, sweep.config), [])
        rows = []
        for (label, config), members in groups.items():
            k, k_speedup = best_k(swept.get((label, config), []))
            measured = [r.speedup for r in members if r.speedup is not None]
            rows.append(BoardRow(label, config, len(members), _mean(r.acceptance_rate for r in members),
                                 _mean(r.tokens_per_forward for r in members), _median(measured), len(measured),
                                 k, k_speedup, len(swept.get((label, config), []))))
        return rows

    # --- persistence -------------------------------------------------------------------------------------
    def _save(self) -> None:
        if self.path is None:
            return
        data = {"runs": [asdict(r) for r in self.runs], "sweeps": [asdict(s) for s in self.sweeps],
                "reset_at": self.reset_at}
        tmp = Path(self.path).with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data))
            tmp.replace(self.path)
        except OSError:
            pass  # the board still works in memory

    def _load(self) -> None:
        try:
            data = json.loads(Path(self.path).read_text())
            self.runs = [BoardRun(**r) for r in data.get("runs", [])]
            self.sweeps = [SweepRecord(**{**s, "speedups": {int(k): v for k, v in s["speedups"].items()}})
                           for s in data.get("sweeps", [])]
            self.reset_at = data.get("reset_at")
        except (OSError, ValueError, TypeError, KeyError):
            self.runs, self.sweeps = [], []  # an unreadable file starts an empty board


def board_path(persistent_dir: Path = PERSISTENT_DIR) -> Optional[Path]:
    """The board's file on a Space's persistent storage when it exists and is writable, else None (memory)."""
    if persistent_dir.is_dir() and os.access(persistent_dir, os.W_OK):
        return persistent_dir / FILE_NAME
    return None
