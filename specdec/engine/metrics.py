"""Run metrics (from events and runner counters) and memory measurement."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from specdec.engine.events import PEAK_CPU, PEAK_CUDA, MemoryReport, RunMetrics, StepEvent
from specdec.engine.theory import run_record
from specdec.models.memory import format_bytes, kv_bytes_per_position

import torch


def summarize(events: list[StepEvent], wall_time_s: float, target_runner, drafter, memory) -> RunMetrics:
    """The run's final RunMetrics: the engine's counters (forwards, time inside them) beside the events'.
    drafter: anything with forward_calls and forward_time_s (a Drafter), or None."""
    return run_record(
        events, wall_time_s, target_forwards=target_runner.forward_calls if target_runner is not None else 0,
        draft_forwards=drafter.forward_calls if drafter is not None else 0,
        forward_time_s=sum(r.forward_time_s for r in (target_runner, drafter) if r is not None), memory=memory)


@dataclass(frozen=True)
class MemoryProbe:
    """The measured side of a run's memory (MemoryReport defines the terms), started before the run allocates."""

    source: Optional[str]  # PEAK_CUDA | PEAK_CPU | None: nothing to measure with here
    start_bytes: int = 0  # CUDA: allocated; CPU: resident, when the run started


def start_memory_probe(device: torch.device) -> MemoryProbe:
    """Resets the peak statistics (CUDA: the allocator's; CPU: the process's high-water mark) and notes
    what is in use now."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return MemoryProbe(PEAK_CUDA, int(torch.cuda.memory_allocated(device)))
    rss = _status_bytes("VmRSS") if device.type == "cpu" else None
    if rss is None or not _reset_peak_rss():
        return MemoryProbe(None)
    return MemoryProbe(PEAK_CPU, rss)


def peak_delta_bytes(probe: Optional[MemoryProbe], device: torch.device) -> Optional[int]:
    """The peak since the probe started, over what was in use then (None when not measurable)."""
    if probe is None or probe.source is None:
        return None
    peak = torch.cuda.max_memory_allocated(device) if probe.source == PEAK_CUDA else _status_bytes("VmHWM")
    return None if peak is None else max(0, int(peak) - probe.start_bytes)


def _reset_peak_rss() -> bool:
    """Linux: writing 5 to clear_refs sets the peak RSS (VmHWM) to the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def _status_bytes(key: str) -> Optional[int]:
    """A "kB" line of /proc/self/status (VmRSS, VmHWM) in bytes."""
    try:
        with open("/proc/self/status") as status:
            line = next((l for l in status if l.startswith(key + ":")), None)
    except OSError:
        return None
    return int(line.split()[1]) * 1024 if line else None


def measure_memory(target, drafter, target_runner, probe: Optional[MemoryProbe] = None, k: int = 0) -> MemoryReport:
    """The run's MemoryReport: parameter bytes, the state its runners hold now, the verification slots of
    K drafts (k: the largest K the run's schedule may use) and, with a probe, its measured peak."""
    device = target.device
    config = getattr(getattr(target, "model", None), "config", None)  # absent on models without a transformers config
    per_position = 0 if drafter is None else None if config is None else kv_bytes_per_position(
        config, getattr(target_runner, "kv_dtype", None) or target.dtype)  # a static runner's cache may be wider
    return MemoryReport(
        device=str(device),
        target_param_bytes=target.param_bytes,
        draft_param_bytes=drafter.param_bytes() if drafter is not None else 0,
        target_kv_bytes=target_runner.kv_bytes() if target_runner is not None else 0,
        draft_kv_bytes=drafter.state_bytes() if drafter is not None else 0,
        peak_device_bytes=int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None,
        process_rss_bytes=process_rss_bytes(),
        verify_kv_bytes=None if per_position is None else k * per_position,
        peak_delta_bytes=peak_delta_bytes(probe, device),
        peak_source=probe.source if probe is not None else None,
        target_weights=getattr(target, "weights_label", ""),
    )


def process_rss_bytes() -> Optional[int]:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def memory_summary(memory: Optional[MemoryReport]) -> str:
    """One line in MemoryReport's terms (the CLI and bench print it)."""
    if memory is None:
        return "memory: not reported"
    b = format_bytes
    peak = ("not measurable here" if memory.peak_source is None
            else f"{b(memory.peak_delta_bytes)} ({memory.peak_source})")
    which = f" ({memory.target_weights})" if memory.target_weights else ""
    return (f"memory: extra {b(memory.extra_bytes)} = draft weights {b(memory.draft_param_bytes)} + draft KV cache "
            f"{b(memory.draft_kv_bytes)} + verification slots {b(memory.verify_kv_bytes)}; target weights "
            f"{b(memory.target_param_bytes)}{which}, target KV cache {b(memory.target_kv_bytes)}; run peak over its "
            f"start {peak}")
