"""Will it fit? Estimates made before allocating: a model's weights before it loads, a run's KV cache
before a runner preallocates it. Refusals are one line that says what to change.

"Free" memory is what the device can still give: on CUDA, the device's free memory plus what torch's
caching allocator holds unused; on a CPU, the smaller of the system's available memory and what the
process's cgroup (a container, a Space) still allows, read at most every CPU_FREE_FRESH_S (a load reads it
afresh). Estimates are deliberately simple (weights: parameters x bytes per parameter; a run: keys and values of
every layer for every position, plus the prefill's attention scores).
"""
from __future__ import annotations

import threading
import time
from typing import Optional

from specdec.errors import InvalidSettingsError, ModelLoadError

import torch

HEADROOM = 1.2  # a load or a run must leave this factor of its estimate free (conversion copies, activations)
SCORE_BYTES = 4  # attention scores are computed in float32 at worst
# a CPU's free memory read less than this long ago is reused: every run checks its cache before it starts, and the
# sampling tests start runs by the thousand
CPU_FREE_FRESH_S = 0.2
_CPU_FREE: list = [float("-inf"), None]  # [when it was read (time.monotonic), the reading]
_CPU_FREE_LOCK = threading.Lock()
CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),  # cgroup v2
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def format_bytes(n: Optional[float]) -> str:
    """Binary units, as the memory figures use: 512 B, 48.0 KiB, 3.5 MiB, 1.2 GiB ("–" when unknown)."""
    if n is None:
        return "–"
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def free_bytes(device: torch.device) -> Optional[int]:
    """Memory the device can still give (None when unknown, e.g. mps)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)  # torch reuses these
        return int(free + max(0, cached))
    if device.type != "cpu":
        return None
    with _CPU_FREE_LOCK:
        if time.monotonic() - _CPU_FREE[0] > CPU_FREE_FRESH_S:
            _CPU_FREE[:] = time.monotonic(), _cpu_free_bytes()
        return _CPU_FREE[1]


def _cpu_free_bytes() -> Optional[int]:
    psutil = _psutil()
    if psutil is None:
        return None
    available = int(psutil.virtual_memory().available)
    room = cgroup_room()
    return min(available, room) if room is not None else available


def total_bytes(device: torch.device) -> Optional[int]:
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    if device.type != "cpu":
        return None
    psutil = _psutil()
    if psutil is None:
        return None
    total = int(psutil.virtual_memory().total)
    limit = cgroup_limit()
    return min(total, limit) if limit is not None else total


def _psutil():
    try:
        import psutil
    except ImportError:  # no way to know: the checks then let the allocator decide
        return None
    return psutil


def _read_number(path: str) -> Optional[int]:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (no limit) reads as None


def cgroup_limit() -> Optional[int]:
    for limit_file, _ in CGROUP_FILES:
        limit = _read_number(limit_file)
        if limit is not None and limit < 2**60:  # v1 writes a huge number for "no limit"
            return limit
    return None


def cgroup_room() -> Optional[int]:
    """The cgroup's limit minus its current usage, when it has a limit."""
    for limit_file, usage_file in CGROUP_FILES:
        limit, usage = _read_number(limit_file), _read_number(usage_file)
        if limit is not None and usage is not None and limit < 2**60:
            return max(0, limit - usage)
    return None


def config_value(config, *names) -> Optional[int]:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def kv_bytes_per_position(config, dtype: torch.dtype) -> Optional[int]:
    """Keys and values of every layer for one position (None when the config does not say its shape)."""
    layers = config_value(config, "num_hidden_layers", "n_layer", "num_layers")
    heads = config_value(config, "num_attention_heads", "n_head")
    width = config_value(config, "hidden_size", "n_embd", "d_model")
    if not (layers and heads):
        return None
    kv_heads = config_value(config, "num_key_value_heads") or heads
    head_dim = config_value(config, "head_dim") or (width // heads if width else None)
    if not head_dim:
        return None
    return 2 * layers * kv_heads * head_dim * dtype.itemsize


def run_bytes(config, dtype: torch.dtype, max_length: int, prompt_length: int = 0) -> Optional[int]:
    """A run's KV cache for max_length positions plus the prefill's attention scores."""
    per_position = kv_bytes_per_position(config, dtype)
    if per_position is None:
        return None
    heads = config_value(config, "num_attention_heads", "n_head") or 1
    return per_position * max_length + heads * prompt_length * prompt_length * SCORE_BYTES


def check_run_fits(name: str, config, dtype: torch.dtype, device: torch.device, max_length: int,
                   prompt_length: int = 0) -> None:
    """Refuses, before anything is allocated, a run whose cache would not fit in free memory."""
    needed = run_bytes(config, dtype, max_length, prompt_length)
    free = free_bytes(device)
    if needed is None or free is None or needed * HEADROOM <= free:
        return
    raise InvalidSettingsError(
        f"A run of {max_length:,} positions needs about {gb(needed)} of KV cache for {name}, more than the "
        f"{gb(free)} free on {device.type}: lower max new tokens or K, or shorten the prompt")


def check_load_fits(name: str, needed: Optional[int], device: torch.device, budget: Optional[int]) -> None:
    """Refuses a load whose weights exceed the model-memory budget or the memory free on the device."""
    if needed is None:
        return
    if budget is not None and needed > budget:
        raise ModelLoadError(
            f"{name} needs about {gb(needed)} for its weights, more than this deployment's model memory of "
            f"{gb(budget)} (SPECDEC_MODEL_CACHE_GB): choose a smaller model")
    with _CPU_FREE_LOCK:  # loads follow each other closely (a target, then its draft): each reads memory afresh
        _CPU_FREE[0] = float("-inf")
    free = free_bytes(device)
    if free is not None and needed * HEADROOM > free:
        raise ModelLoadError(
            f"{name} needs about {gb(needed)} for its weights, but only {gb(free)} is free on {device.type}: "
            "choose a smaller model or a smaller dtype")


def default_budget(device: torch.device) -> Optional[int]:
    """Half of the device's memory (the rest is for runs, the app and everything else)."""
    total = total_bytes(device)
    return total // 2 if total is not None else None
