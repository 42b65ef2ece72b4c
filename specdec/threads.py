"""How many CPU threads a decoding step computes on.

app.py (and the measurement scripts) set OMP_WAIT_POLICY=PASSIVE: OpenMP threads sleep between parallel
regions instead of spinning, because on a CPU shared with other processes spinning threads stall every
step (docs/engine.md). A sleeping thread then pays a wake-up (~100 us here) on every region, and a
decoding forward of SmolLM2-135M in bfloat16 is ~200 products of 20-80 us of work each: on the 2-core
Xeon this project runs on, one forward of 1 / 5 / 61 tokens took 48 / 55 / 115 ms on two threads and
36 / 40 / 81 ms on one (scripts/measure_runner_forward.py). So a bfloat16 run on a CPU under that policy
computes each step on one thread; everything else keeps torch's count. SPECDEC_STEP_THREADS=N sets the
count for every CPU run instead (0: torch's).
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator, Optional

import torch


def step_threads(device: torch.device, dtype: Optional[torch.dtype]) -> Optional[int]:
    """The thread count a step of this run computes on, or None for torch's own."""
    if device.type != "cpu":
        return None
    chosen = os.environ.get("SPECDEC_STEP_THREADS", "").strip()
    if chosen:
        return int(chosen) if chosen.isdigit() and int(chosen) > 0 else None
    passive = os.environ.get("OMP_WAIT_POLICY", "").strip().upper() == "PASSIVE"
    return 1 if passive and dtype == torch.bfloat16 else None


@contextlib.contextmanager
def threads_for_step(device: torch.device, dtype: Optional[torch.dtype]) -> Iterator[None]:
    """Run the body on step_threads(...) threads, then restore torch's count."""
    wanted, before = step_threads(device, dtype), torch.get_num_threads()
    if wanted is None or wanted == before:
        yield
        return
    torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)
