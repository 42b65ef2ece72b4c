"""Devices for the cost model (specdec/measure/cost_model.py): memory bandwidth, peak matmul FLOP/s per dtype and a
fixed per-forward overhead; datasheet presets, and this machine measured at runtime.

Row curve (measured devices only): the time per weight byte of a linear layer over M input rows, measured at
a few M (ROW_COUNTS, PREFILL_ROWS) on weights too big for the caches, so that every product streams its
weights from memory as decoding does, through the same kernels as the static runner (its float16 weight
copies on a float32 CPU: packed_weights.py). A CPU BLAS can run a product of a few rows far below both the
bandwidth roof and the square matmul's peak (on the 2-core development machine, MKL's float32 GEMM took
~2.7x as long for 5 rows as for 1; the float16-weight GEMM ~1.25x), so on this machine the cost model
times the weight products by this curve instead of the roofline. The GPU
presets have none: they keep the roofline assumption that a product of a few rows is bandwidth-bound (its
weights are read once whatever M is, and M rows are far below a GPU's ridge point); that is an assumption,
not a measurement.

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

import math
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from specdec.runners.packed_weights import linear, weights_for
from specdec.runners.threads import threads_for_step

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
    row_curves: dict = field(default_factory=dict)  # dtype name -> ((rows, seconds per weight byte), ...) by rows;
    # measured devices only (module docstring)

    def peak(self, dtype: str) -> float:
        if dtype not in self.peak_flops:
            hint = " (or press Measure on this machine to measure it)" if self.measured else ""
            raise ValueError(f"{self.label} has no {dtype} figure: choose "
                             f"{' or '.join(sorted(self.peak_flops))}{hint}.")
        return self.peak_flops[dtype]

    def weight_byte_s(self, dtype: str, rows: int) -> Optional[float]:
        """Seconds per weight byte of a linear layer over `rows` input rows, from the measured row curve (None:
        no curve for this dtype, the roofline applies)."""
        curve = self.row_curves.get(dtype)
        return None if not curve else interpolate_rows(curve, rows)

    @property
    def ridge(self) -> dict:
        """FLOP per byte where each dtype's roof turns from bandwidth- to compute-bound."""
        return {dtype: peak / self.bandwidth for dtype, peak in self.peak_flops.items()}


def interpolate_rows(curve, rows: int) -> float:
    """A row curve at `rows`: linear in log(rows) between measured points; the first point's value below it;
    beyond the last, time grows in proportion to rows (the last point's FLOP/s: a large product is
    compute-bound)."""
    first_rows, first_s = curve[0]
    if rows <= first_rows:
        return first_s
    for (lo, lo_s), (hi, hi_s) in zip(curve, curve[1:]):
        if rows <= hi:
            return lo_s + (hi_s - lo_s) * (math.log(rows) - math.log(lo)) / (math.log(hi) - math.log(lo))
    last_rows, last_s = curve[-1]
    return last_s * rows / last_rows


# GPU presets: NVIDIA datasheet figures, dense (no 2:4 sparsity), non-tensor fp32 (PyTorch's default: TF32
# off for matmuls). The overhead is assumed, not measured: about 40 operations per decoder layer in this
# project's eager static runner at a few µs of host dispatch and launch each, and a fixed cost per forward;
# CUDA graphs would remove most of it (docs/cost_model.md says where the assumption comes from).
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


ROW_COUNTS = (1, 2, 3, 5, 9, 17)  # a forward's new tokens are its products' rows: decode and verification
PREFILL_ROWS = (64, 256)  # compute-bound: measured on one layer's matrices (whether cached or not hardly matters)
# (outputs, inputs) of SmolLM2-135M's q, k, v, o, gate, up, down, as F.linear takes them
LAYER_SHAPES = ((576, 576), (192, 576), (192, 576), (576, 576), (1536, 576), (1536, 576), (576, 1536))
STREAM_LAYERS = 4  # 4 layers' matrices + HEAD_SLICE: 72 MiB in float32, beyond this machine's caches
HEAD_SLICE = (8192, 576)  # a wide product, like the output head's


def weight_matrices(device: torch.device, dtype: torch.dtype) -> list[torch.Tensor]:
    """Distinct weight matrices of SmolLM2-like shapes, views of one buffer (its values do not change the time)."""
    shapes = [*LAYER_SHAPES * STREAM_LAYERS, HEAD_SLICE]
    flat = torch.full((sum(a * b for a, b in shapes),), 2.0**-7, device=device, dtype=dtype)  # exact in float16
    offsets = [0]
    for a, b in shapes:
        offsets.append(offsets[-1] + a * b)
    return [flat[start:start + a * b].view(a, b) for start, (a, b) in zip(offsets, shapes)]


def products_s(weights: list[torch.Tensor], rows: int, device: torch.device) -> float:
    """Seconds of one product over `rows` rows ([1, rows, inputs], as the static runner calls it, through
    the packed weight copies where it would make them: packed_weights.py) per matrix, in turn."""
    inputs = {w.shape[1]: torch.full((1, rows, w.shape[1]), 0.01, device=device, dtype=w.dtype) for w in weights}
    calls = [(inputs[w.shape[1]], weights_for(w)) for w in weights]
    return _timed(lambda: [linear(x, w) for x, w in calls], device, repeats=2)


def measure_row_curve(device: torch.device, dtype: torch.dtype) -> tuple[tuple[int, float], ...]:
    """((rows, seconds per weight byte), ...): each M of ROW_COUNTS over every matrix of weight_matrices (each
    product streams its weights from memory), each of PREFILL_ROWS over one layer's; the fastest of 2."""
    weights = weight_matrices(device, dtype)
    size = weights[0].element_size()
    curve = []
    for rows in ROW_COUNTS + PREFILL_ROWS:
        subset = weights if rows in ROW_COUNTS else weights[:len(LAYER_SHAPES)]
        curve.append((rows, products_s(subset, rows, device) / (sum(w.numel() for w in subset) * size)))
    return tuple(curve)


def tiny_llama(layers: int, device: torch.device):
    """A random-weight Llama (hidden 64) as a LoadedModel, so that it runs through the engine's own runner."""
    from specdec.models.loading import LoadedModel

    from transformers import LlamaConfig, LlamaForCausalLM

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
    from specdec.models.loading import resolve_device

    resolved = resolve_device(device)
    started = time.perf_counter()
    with torch.inference_mode(), threads_for_step(resolved):  # on the threads a decoding step computes on
        bandwidth = measure_bandwidth(resolved)
        peak = measure_peak(resolved, torch.float32)
        curve = measure_row_curve(resolved, torch.float32)
        per_forward, per_layer = measure_overhead(resolved)
        label = _machine_label(resolved)
    megabytes = BANDWIDTH_BYTES.get(resolved.type, BANDWIDTH_BYTES["cpu"]) >> 20
    streamed = sum(a * b for a, b in [*LAYER_SHAPES * STREAM_LAYERS, HEAD_SLICE]) * 4 >> 20
    rows = ", ".join(str(m) for m in ROW_COUNTS + PREFILL_ROWS)
    return Device(THIS_MACHINE, label, bandwidth, {"float32": peak}, per_forward, per_layer,
                  row_curves={"float32": curve}, measured=True,
                  source=f"measured in {time.perf_counter() - started:.1f} s: the sum of a {megabytes} MB tensor, a "
                         f"square matmul, linear layers of {rows} rows over {streamed} MB of weights, the forwards "
                         "of two tiny models")


_PEAKS: dict[tuple[str, str], tuple] = {}  # this process's measured (peak, row curve) of other dtypes


def with_dtype(machine: Device, dtype: str, device: str = "auto", measure: bool = True) -> Device:
    """This machine with `dtype`'s matmul peak and row curve too, measured once per process (float32 is always
    there); with measure=False only figures measured before are added."""
    from specdec.models.loading import DTYPES, resolve_device

    key = (device, dtype)
    if dtype in machine.peak_flops or dtype not in DTYPES or (key not in _PEAKS and not measure):
        return machine
    if key not in _PEAKS:
        resolved = resolve_device(device)
        with torch.inference_mode(), threads_for_step(resolved):
            _PEAKS[key] = measure_peak(resolved, DTYPES[dtype]), measure_row_curve(resolved, DTYPES[dtype])
    peak, curve = _PEAKS[key]
    return replace(machine, peak_flops={**machine.peak_flops, dtype: peak}, row_curves={**machine.row_curves,
                                                                                        dtype: curve})
