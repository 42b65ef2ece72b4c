"""How many CPU threads a decoding step computes on.

The process-wide set-up (process.py, run by importing specdec) sets OMP_WAIT_POLICY=PASSIVE: OpenMP threads
sleep between parallel regions instead of spinning, because on a CPU shared with other processes spinning
threads stall every step. A sleeping thread then pays a wake-up on every parallel region, and a decoding
forward is hundreds of small products, so under that policy a CPU run computes each step (and its prefill)
on one thread by default. Everything else keeps torch's count. SPECDEC_STEP_THREADS=N sets the count for
every CPU run instead (0: torch's).

A model loaded with the measured `auto` (tuning.py) carries the thread count measured fastest for it: its
runners' forwards run on that count (threads_for_model, called by every runner), whatever the step's count.
It may also carry a count per row count (ROW_BUCKETS: a one-token step, a short verification, a long one):
a one-token step streams the weights and is bound by memory, a verification of K + 1 rows reuses each weight
K + 1 times and is bound by compute, so the fastest count can differ; a forward of rows in a measured bucket
runs on that bucket's count. An explicit count (SPECDEC_STEP_THREADS, or `--threads` through
set_explicit_threads) wins over all of them.
Measured one- and two-thread step times per machine: docs/engine.md ("CPU").
"""
from __future__ import annotations

import contextlib
import os
import weakref
from typing import Iterator, Optional

from specdec import config

import torch

_EXPLICIT: list[Optional[int]] = [None]  # set_explicit_threads: the operator's count for this process
_MODEL_THREADS: "weakref.WeakKeyDictionary[torch.nn.Module, int]" = weakref.WeakKeyDictionary()
_ROW_THREADS: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()
# the row counts of a forward that `tune` measures a thread count for: (name, fewest rows, most rows)
ROW_BUCKETS = (("1", 1, 1), ("2-5", 2, 5), ("6-17", 6, 17))


def row_bucket(rows: int) -> Optional[str]:
    """The name of the bucket a forward of `rows` new tokens falls in ('1', '2-5', '6-17'), or None (a prefill)."""
    return next((name for name, low, high in ROW_BUCKETS if low <= rows <= high), None)


def set_explicit_threads(count: Optional[int]) -> None:
    """The operator's count (`--threads`) for every CPU step and forward of this process; None: not set."""
    _EXPLICIT[0] = count if count and count > 0 else None


def explicit_threads() -> Optional[int]:
    """SPECDEC_STEP_THREADS (a positive count; 0 or junk: torch's, None), else set_explicit_threads' count."""
    if config.is_set("SPECDEC_STEP_THREADS"):
        return config.get("SPECDEC_STEP_THREADS")
    return _EXPLICIT[0]


def has_explicit_threads() -> bool:
    return config.is_set("SPECDEC_STEP_THREADS") or _EXPLICIT[0] is not None


def set_model_threads(module: torch.nn.Module, count: Optional[int]) -> None:
    """The thread count measured fastest for this model's forwards (tuning.py); None forgets it."""
    if count:
        _MODEL_THREADS[module] = count
    else:
        _MODEL_THREADS.pop(module, None)


def set_row_threads(module: torch.nn.Module, counts: Optional[dict]) -> None:
    """The thread count measured fastest per row bucket ({'1': 1, '2-5': 2, ...}) for this model's forwards;
    None or {} forgets them."""
    if counts:
        _ROW_THREADS[module] = dict(counts)
    else:
        _ROW_THREADS.pop(module, None)


def row_threads(module: torch.nn.Module) -> dict:
    """The measured count per row bucket of this model ({} where none was measured)."""
    return dict(_ROW_THREADS.get(module, {}))


def model_threads(module: torch.nn.Module, rows: Optional[int] = None) -> Optional[int]:
    """The count this model's forwards of `rows` new tokens run on: the explicit one, else the one measured for
    the rows' bucket, else the model's measured one, else None (the step's)."""
    if has_explicit_threads():
        return explicit_threads()
    by_rows = _ROW_THREADS.get(module, {}).get(row_bucket(rows)) if rows else None
    return by_rows or _MODEL_THREADS.get(module)


def threads_for_model(module: torch.nn.Module, rows: Optional[int] = None,
                      device: Optional[torch.device] = None) -> contextlib.AbstractContextManager:
    """Run one forward of `rows` new tokens of this model on model_threads(...) threads (where it has a count),
    then restore. device: the model's, where the caller knows it (a runner: asked on every forward)."""
    device = device or next(module.parameters()).device
    return _threads(model_threads(module, rows) if device.type == "cpu" else None)


def step_threads(device: torch.device) -> Optional[int]:
    """The thread count a step of this run computes on, or None for torch's own."""
    if device.type != "cpu":
        return None
    if has_explicit_threads():
        return explicit_threads()
    passive = os.environ.get("OMP_WAIT_POLICY", "").strip().upper() == "PASSIVE"
    return 1 if passive else None


def forward_threads(module: torch.nn.Module) -> int:
    """The thread count this model's forwards actually run on (its own, else the step's, else torch's)."""
    device = next(module.parameters()).device
    return model_threads(module) or step_threads(device) or torch.get_num_threads()


def threads_for_step(device: torch.device) -> contextlib.AbstractContextManager:
    """Run the body on step_threads(...) threads, then restore torch's count."""
    return _threads(step_threads(device))


_UNCHANGED = contextlib.nullcontext()  # every forward asks: a forward that keeps torch's count costs no generator


def _threads(wanted: Optional[int]) -> contextlib.AbstractContextManager:
    if wanted is None or wanted == torch.get_num_threads():
        return _UNCHANGED
    return _set_threads(wanted)


@contextlib.contextmanager
def _set_threads(wanted: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)
