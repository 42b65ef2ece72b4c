"""Devices for the cost model (specdec/cost_model.py): memory bandwidth, peak matmul FLOP/s per dtype and a
fixed per-forward overhead; datasheet presets, and this machine measured at runtime.

Overhead, the time a forward costs beyond moving bytes and doing FLOPs: the host's work of launching
every operation (Python, PyTorch's dispatch, a GPU kernel launch), `forward_overhead_s` once per forward
(embedding, final norm, head, sampling hand-off) plus `layer_overhead_s` per decoder layer. For this
machine it is measured, not assumed: the 1-token forward time of two tiny random-weight Llama models (1 and
9 layers, hidden size 64, whose bytes and FLOPs are negligible) through the engine's own runner; the
difference per extra layer is the per-layer term, the rest the per-forward term. A model's real layers run
the same operations, so they pay the same dispatch (one difference: tensors this small may run on fewer
threads than real ones). For the GPU presets the overhead is an assumption, stated below.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import torch

THIS_MACHINE = "this-machine"


@dataclass(frozen=True)
class Device:
    key: str
    label: str
    bandwidth: float  # bytes/s of memory read
    peak_flops: dict = field(default_factory=dict)  # dtype name -> matmul FLOP/s; a dtype it lacks is absent
    forward_overhead_s: float = 0.0  # fixed host time per forward
    layer_overhead_s: float = 0.0  # fixed host time per decoder layer
    source: str = ""  # where the figures come from
    measured: bool = False

    def peak(self, dtype: str) -> float:
        if dtype not in self.peak_flops:
            hint = " (or press Measure on this machine to measure it)" if self.measured else ""
            raise ValueError(f"{self.label} has no {dtype} figure: choose "
                             f"{' or '.join(sorted(self.peak_flops))}{hint}.")
        return self.peak_flops[dtype]

    @property
    def ridge(self) -> dict:
        """FLOP per byte where each dtype's roof turns from bandwidth- to compute-bound."""
        return {dtype: peak / self.bandwidth for dtype, peak in self.peak_flops.items()}


# GPU presets: NVIDIA datasheet figures, dense (no 2:4 sparsity), non-tensor fp32 (PyTorch's default: TF32
# off for matmuls). The overhead is assumed, not measured: about 40 operations per decoder layer in this
# project's eager static runner at ~4 µs of host dispatch and launch each (0.15 ms), and 0.3 ms per forward;
# CUDA graphs would remove most of it (FIELD-NOTES: on an H200, eager Hugging Face forwards took ~24 ms for
# both a 0.85B and a 6.7B shape, host-bound; graphed, 2.4 and 7.0 ms).
GPU_LAYER_OVERHEAD_S = 0.15e-3
GPU_FORWARD_OVERHEAD_S = 0.3e-3
_GPU = dict(forward_overhead_s=GPU_FORWARD_OVERHEAD_S, layer_overhead_s=GPU_LAYER_OVERHEAD_S)
PRESETS: dict[str, Device] = {
    # NVIDIA T4 datasheet: 320 GB/s GDDR6; FP32 8.1 TFLOPS; mixed-precision FP16 65 TFLOPS (Turing: no bf16).
    "t4": Device("t4", "NVIDIA T4", 320e9, {"float32": 8.1e12, "float16": 65e12},
                 source="NVIDIA T4 datasheet", **_GPU),
    # NVIDIA A100 datasheet (80GB SXM): 2,039 GB/s HBM2e; FP32 19.5 TFLOPS; BF16/FP16 Tensor Core 312 TFLOPS.
    "a100": Device("a100", "NVIDIA A100 80GB SXM", 2039e9, {"float32": 19.5e12, "bfloat16": 312e12,
                                                            "float16": 312e12},
                   source="NVIDIA A100 datasheet", **_GPU),
    # NVIDIA H100 datasheet (SXM): 3.35 TB/s HBM3; FP32 67 TFLOPS; BF16/FP16 Tensor Core 1,979 TFLOPS with
    # sparsity, 989 dense.
    "h100": Device("h100", "NVIDIA H100 SXM", 3.35e12, {"float32": 67e12, "bfloat16": 989e12, "float16": 989e12},
                   source="NVIDIA H100 datasheet", **_GPU),
    # NVIDIA H200 datasheet (SXM): 4.8 TB/s HBM3e; compute as the H100 SXM (FP32 67, BF16/FP16 989 dense).
    "h200": Device("h200", "NVIDIA H200 SXM", 4.8e12, {"float32": 67e12, "bfloat16": 989e12, "float16": 989e12},
                   source="NVIDIA H200 datasheet", **_GPU),
}


def device_choices() -> list[tuple[str, str]]:
    """(label, key) for a dropdown: this machine first, then the presets."""
    return [("This machine (measured)", THIS_MACHINE)] + [(d.label, d.key) for d in PRESETS.values()]


def preset(key: str) -> Device:
    if key not in PRESETS:
        raise ValueError(f"Unknown device {key!r}: choose {', '.join([THIS_MACHINE, *PRESETS])}.")
    return PRESETS[key]


# --- this machine, measured ---------------------------------------------------------------------------

BANDWIDTH_BYTES = {"cpu": 128 * 2**20, "cuda": 1024 * 2**20}  # well beyond any cache
MATMUL_MAX = {"cpu": 2048, "cuda": 8192}
MATMUL_TARGET_S = 0.02  # grow the square matmul until one takes this long (slow dtypes stay small)
REPEATS = 4


def _timed(fn: Callable[[], object], device: torch.device, repeats: int = REPEATS) -> float:
    """The fastest of `repeats` timed calls after one warm-up (the least disturbed by other processes)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_bandwidth(device: torch.device) -> float:
    """Bytes/s of reading a large float32 tensor once (its sum)."""
    x = torch.ones(BANDWIDTH_BYTES.get(device.type, BANDWIDTH_BYTES["cpu"]) // 4, device=device)
    return x.numel() * 4 / _timed(x.sum, device)


def measure_peak(device: torch.device, dtype: torch.dtype) -> float:
    """FLOP/s of a square matmul, grown from 512 until one takes MATMUL_TARGET_S or reaches MATMUL_MAX."""
    n, largest = 512, MATMUL_MAX.get(device.type, MATMUL_MAX["cpu"])
    while True:
        a, b = torch.randn(n, n, device=device).to(dtype), torch.randn(n, n, device=device).to(dtype)
        seconds = _timed(lambda: a @ b, device, repeats=2)
        if seconds >= MATMUL_TARGET_S or n >= largest:
            return 2 * n**3 / seconds
        n *= 2


def tiny_llama(layers: int, device: torch.device):
    """A random-weight Llama (hidden 64) as a LoadedModel, so that it runs through the engine's own runner."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from .loading import LoadedModel

    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(device).eval().requires_grad_(False)
    return LoadedModel(f"tiny-llama-{layers}", "(built in memory)", model, None, device, torch.float32)


def forward_seconds(loaded, tokens: int = 1, context: int = 32, repeats: int = 15) -> float:
    """Median time of a `tokens`-token forward after a `context`-token prefill, through the model's runner."""
    runner = loaded.new_runner(loaded.embedding_rows, context + tokens + 1)
    runner.prefill(list(range(1, context + 1)))
    ids = [1] * tokens
    times = []
    for _ in range(repeats + 1):  # the first call warms up
        start = time.perf_counter()
        runner.forward(ids)
        times.append(time.perf_counter() - start)
        runner.rollback(context)
    return statistics.median(times[1:])


def measure_overhead(device: torch.device, shallow: int = 1, deep: int = 9) -> tuple[float, float]:
    """(per-forward, per-layer) seconds from two tiny models' 1-token forwards (see the module docstring)."""
    t_shallow, t_deep = (forward_seconds(tiny_llama(n, device)) for n in (shallow, deep))
    per_layer = max(0.0, (t_deep - t_shallow) / (deep - shallow))
    return max(0.0, t_shallow - shallow * per_layer), per_layer


def _machine_label(device: torch.device) -> str:
    if device.type == "cuda":
        return f"This machine ({torch.cuda.get_device_name(device)}, measured)"
    return f"This machine ({device.type}, {torch.get_num_threads()} threads, measured)"


_MACHINES: dict[str, Device] = {}  # this process's measurements, by device argument


def measure_this_machine(device: str = "auto") -> Device:
    """This machine's bandwidth, float32 matmul peak and overhead, measured once per process (under a second on a
    CPU) and then reused. Other dtypes' peaks: with_dtype()."""
    if device not in _MACHINES:
        _MACHINES[device] = _measure(device)
    return _MACHINES[device]


def cached_machine(device: str = "auto") -> Optional[Device]:
    """This machine's measurement if this process has made it (never measures)."""
    return _MACHINES.get(device)


def _measure(device: str) -> Device:
    from .loading import resolve_device

    resolved = resolve_device(device)
    started = time.perf_counter()
    with torch.inference_mode():
        bandwidth = measure_bandwidth(resolved)
        peak = measure_peak(resolved, torch.float32)
        per_forward, per_layer = measure_overhead(resolved)
    megabytes = BANDWIDTH_BYTES.get(resolved.type, BANDWIDTH_BYTES["cpu"]) >> 20
    return Device(THIS_MACHINE, _machine_label(resolved), bandwidth, {"float32": peak}, per_forward, per_layer,
                  source=f"measured in {time.perf_counter() - started:.1f} s: the sum of a {megabytes} MB tensor, a "
                         "square matmul, the forwards of two tiny models", measured=True)


_PEAKS: dict[tuple[str, str], float] = {}  # this process's measured peaks of other dtypes


def with_dtype(machine: Device, dtype: str, device: str = "auto", measure: bool = True) -> Device:
    """This machine with `dtype`'s matmul peak too, measured once per process (float32 is always there);
    with measure=False only a peak measured before is added."""
    from .loading import DTYPES, resolve_device

    key = (device, dtype)
    if dtype in machine.peak_flops or dtype not in DTYPES or (key not in _PEAKS and not measure):
        return machine
    if key not in _PEAKS:
        with torch.inference_mode():
            _PEAKS[key] = measure_peak(resolve_device(device), DTYPES[dtype])
    return replace(machine, peak_flops={**machine.peak_flops, dtype: _PEAKS[key]})
