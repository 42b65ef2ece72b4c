"""How many CPU threads a decoding step computes on.

app.py (and the measurement scripts) set OMP_WAIT_POLICY=PASSIVE: OpenMP threads sleep between parallel
regions instead of spinning, because on a CPU shared with other processes spinning threads stall every
step (docs/engine.md). A sleeping thread then pays a wake-up (~100 us) on every region, and a decoding
forward is hundreds of small products of 5-80 us of work each, so under that policy a CPU run computes each
step (and its prefill) on one thread. Measured with scripts/measure_runner_forward.py, one forward of 1 / 5
tokens after a 200-token prefix, one thread against two: SmolLM2-135M in bfloat16 on the 2-core Xeon
36 / 40 ms against 48 / 55; on the 2-core AMD EPYC, float32 with float16 weight copies 13.9 / 18.9 ms against
22.8 / 29.6 and the 6M-parameter lab target 1.3 / 1.7 ms against 1.8 / 3.0; a 200-token float32 prefill
there 281 ms against 326. Everything else keeps torch's count. SPECDEC_STEP_THREADS=N sets the count for
every CPU run instead (0: torch's).
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator, Optional

import torch


def step_threads(device: torch.device) -> Optional[int]:
    """The thread count a step of this run computes on, or None for torch's own."""
    if device.type != "cpu":
        return None
    chosen = os.environ.get("SPECDEC_STEP_THREADS", "").strip()
    if chosen:
        return int(chosen) if chosen.isdigit() and int(chosen) > 0 else None
    passive = os.environ.get("OMP_WAIT_POLICY", "").strip().upper() == "PASSIVE"
    return 1 if passive else None


@contextlib.contextmanager
def threads_for_step(device: torch.device) -> Iterator[None]:
    """Run the body on step_threads(...) threads, then restore torch's count."""
    wanted, before = step_threads(device), torch.get_num_threads()
    if wanted is None or wanted == before:
        yield
        return
    torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)
