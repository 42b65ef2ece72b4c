"""Run metrics (from events and runner counters) and memory measurement."""
from __future__ import annotations

import os
from typing import Optional

import torch

from .events import MemoryReport, RunMetrics, StepEvent
from .theory import measured_alpha


def summarize(events: list[StepEvent], wall_time_s: float, target_runner, drafter, memory) -> RunMetrics:
    """drafter: anything with forward_calls and forward_time_s (a Drafter), or None."""
    new_tokens = sum(len(e.emitted_ids) for e in events)
    drafted = sum(e.k for e in events)
    accepted = sum(e.num_accepted for e in events)
    forward_time = sum(r.forward_time_s for r in (target_runner, drafter) if r is not None)
    target_forwards = target_runner.forward_calls if target_runner is not None else 0
    return RunMetrics(
        new_tokens=new_tokens,
        steps=len(events),
        drafted_tokens=drafted,
        accepted_tokens=accepted,
        acceptance_rate=accepted / drafted if drafted else None,
        alpha=measured_alpha(events),
        mean_tokens_per_target_forward=new_tokens / target_forwards if target_forwards else 0.0,
        acceptance_by_position=acceptance_by_position(events),
        target_forwards=target_forwards,
        draft_forwards=drafter.forward_calls if drafter is not None else 0,
        wall_time_s=wall_time_s,
        tokens_per_s=new_tokens / wall_time_s if wall_time_s > 0 else 0.0,
        draft_time_s=sum(e.draft_time_s for e in events),
        verify_time_s=sum(e.verify_time_s for e in events),
        other_time_s=sum(e.other_time_s for e in events),
        forward_time_s=forward_time,
        engine_efficiency=forward_time / wall_time_s if wall_time_s > 0 else 0.0,
        memory=memory,
    )


def position_counts(events) -> list[tuple[int, int, int, int]]:
    """Per draft position i: (i, steps that drafted a token at i, of those evaluated, of those accepted)."""
    width = max((len(e.drafted) for e in events), default=0)
    rows = []
    for i in range(width):
        at = [e.drafted[i] for e in events if len(e.drafted) > i]
        rows.append((i, len(at), sum(d.evaluated for d in at), sum(d.accepted for d in at)))
    return rows


def acceptance_by_position(events: list[StepEvent]) -> list[Optional[float]]:
    """Position i: steps that accepted draft token i / steps that drafted a token at i."""
    return [accepted / drafted if drafted else None for _, drafted, _, accepted in position_counts(events)]


def measure_memory(target, drafter, target_runner) -> MemoryReport:
    """Parameter bytes (the drafter's: what it adds beyond the target) and state bytes now allocated."""
    device = target.device
    peak = None
    if device.type == "cuda":
        peak = int(torch.cuda.max_memory_allocated(device))
    return MemoryReport(
        device=str(device),
        target_param_bytes=target.param_bytes,
        draft_param_bytes=drafter.param_bytes() if drafter is not None else 0,
        target_kv_bytes=target_runner.kv_bytes() if target_runner is not None else 0,
        draft_kv_bytes=drafter.state_bytes() if drafter is not None else 0,
        peak_device_bytes=peak,
        process_rss_bytes=process_rss_bytes(),
    )


def process_rss_bytes() -> Optional[int]:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
