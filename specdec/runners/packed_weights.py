"""CPU linear layers that read their weights from a packed copy made for the kernel that is fastest on
this CPU for the few rows decoding and verification multiply.

Why: decoding reads every weight once per forward, so on a CPU its speed is memory bandwidth and the
kernel's fixed cost per call. Two copies, each made only where it computes with the same weight values:

- **float16 copies of float32 weights** (`Fp16Linear`): FBGEMM's float16-weight GEMM
  (torch.fbgemm_linear_fp16_weight_fp32_activation) reads half the bytes, widens them to float32 in
  registers and keeps activations and sums in float32. A matrix gets one only when every float32 value
  survives float32 -> float16 -> float32 unchanged (SmolLM2's weights, dequantised from Q4_1, all do).
- **oneDNN-packed bfloat16 weights** (`Bf16Linear`), for a bfloat16 model on a CPU that computes bf16
  natively: torch.ops.mkldnn._linear_pointwise on a weight reordered once
  (torch.ops.mkldnn._reorder_linear_weight, what torch.compile's CPU freezing does) skips the reorder
  that F.linear repeats on every call.

Exactness: a verification forward scores a token exactly as a one-token forward would only where each
row's result does not depend on how many rows are multiplied with it. float16_rows_exact() probes whether
this CPU's FBGEMM kernels are row-exact (AVX2-only kernels sum 1-2 rows in another order than 3-6); where
they are not, the copies are still used and a greedy token can change only at a near-tie of the target's
two likeliest tokens. Which path is fastest is measured per machine, not inferred from CPU flags
(tuning.py). Only the order of the sums differs from torch's default kernel, as with any other kernel.

Copies are made once per weight tensor and shared by every runner (and every drafter that shares the
target's layers); they live as long as the weight and count as weights in the memory report.
SPECDEC_PACKED_WEIGHTS=0 switches both off (every linear then goes through F.linear). Measured product
times per machine: docs/engine.md ("Float16 weight copies", "CPU").
"""
from __future__ import annotations

import functools
import platform
import threading
import warnings
import weakref
from typing import Callable, NamedTuple, Optional, TypeVar

from specdec import config

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message=r"fbgemm_\w+ is deprecated")  # no successor for float32 activations yet
_LOCK = threading.Lock()
# id(weight) -> (the weight's version counter when copied, its copy or None: no copy for this weight)
_COPIES: dict[int, tuple[int, Optional["Fp16Linear | Bf16Linear"]]] = {}
BF16_CPU_FLAGS = {"avx512_bf16", "amx_bf16"}  # x86 instructions that compute bf16 natively
T = TypeVar("T")


class Fp16Linear(NamedTuple):
    packed: torch.Tensor  # FBGEMM's packed float16 matrix of a weight [out, in]
    bias: torch.Tensor  # [out]: the layer's bias, or zeros (FBGEMM needs one)
    nbytes: int  # bytes of the copy


class Bf16Linear(NamedTuple):
    packed: torch.Tensor  # oneDNN's reordered bfloat16 matrix of a weight [out, in]
    bias: Optional[torch.Tensor]  # [out] or None
    nbytes: int  # bytes of the copy



def enabled() -> bool:
    return config.get("SPECDEC_PACKED_WEIGHTS")


def fp16_available() -> bool:
    return enabled() and _torch_has_fbgemm_fp16()


def bf16_available() -> bool:
    return enabled() and cpu_has_native_bf16() and _torch_has_onednn_bf16()


@functools.cache  # asked on every linear layer's call: the answer cannot change while the process runs
def _torch_has_fbgemm_fp16() -> bool:
    return hasattr(torch, "fbgemm_pack_gemm_matrix_fp16") and "fbgemm" in torch.backends.quantized.supported_engines


@functools.cache
def _torch_has_onednn_bf16() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")


def cpu_has_native_bf16() -> bool:
    return bool(BF16_CPU_FLAGS & cpu_flags())


def cpu_has_amx_bf16() -> bool:
    """AMX's bf16 tiles: the CPUs where oneDNN's bf16 product of a row does not depend on how many rows share
    the call (with avx512_bf16 alone a product of one row can differ from the same row among several:
    tests/runners/test_packed_weights.py checks it on the machine that runs it)."""
    return "amx_bf16" in cpu_flags()


@functools.cache
def cpu_flags() -> frozenset:
    """From /proc/cpuinfo's flags (Linux); elsewhere none."""
    try:
        with open("/proc/cpuinfo") as info:
            return frozenset(next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), []))
    except OSError:
        return frozenset()


@functools.cache
def cpu_name() -> str:
    """From /proc/cpuinfo's model name (Linux); elsewhere what platform says."""
    try:
        with open("/proc/cpuinfo") as info:
            name = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        name = ""
    return name or platform.processor() or platform.machine()


@functools.cache
def float16_rows_exact() -> bool:
    """Whether a row's product through a float16 copy is the same whatever rows share the call (the kernels
    FBGEMM picks depend only on the row count, not on the matrix's shape). False where there are no copies."""
    return fp16_available() and not float16_row_counts_that_differ(16, (64, 96))


def float16_row_counts_that_differ(max_rows: int, shape: tuple[int, int]) -> list[int]:
    """The row counts 1 .. max_rows whose rows, through the float16 copy of a random [out, in] = shape matrix,
    differ in any bit from the same rows multiplied three at a time (heavy-tailed activations, like a decoder
    MLP's: Gaussian rows rarely reveal a kernel that sums in another order)."""
    generator = torch.Generator().manual_seed(0)
    copy = _fp16_copy((torch.randn(*shape, generator=generator) * 0.05).half().float(), None)
    if copy is None:
        return list(range(1, max_rows + 1))
    rows = max_rows + 3
    hidden = torch.randn(rows, shape[1], generator=generator) * torch.rand(rows, shape[1], generator=generator).pow(4) * 8
    by_threes = torch.cat([linear(hidden[i:i + 3], copy) for i in range(0, rows - 2, 3)])
    return [n for n in range(1, max_rows + 1) if not torch.equal(linear(hidden[:n], copy), by_threes[:n])]


def exact_in_float16(weight: torch.Tensor) -> bool:
    return bool(torch.equal(weight.to(torch.float16).to(weight.dtype), weight))


def linear_weights(module: torch.nn.Linear):
    """What `linear` takes for this layer: a packed copy where one can stand in for the weight, else
    (weight, bias) for F.linear."""
    read = getattr(_READING, "layers", None)
    if read is not None:  # prepared() is building: it checks this layer's weight before reusing what it made
        read.append(module)
    return weights_for(module.weight, module.bias)


def weights_for(weight: torch.Tensor, bias: Optional[torch.Tensor] = None):
    """linear_weights for a bare weight [out, in] and bias [out] (or None)."""
    maker = _maker(weight)
    if maker is None:
        return weight, bias
    with _LOCK:
        known = _COPIES.get(id(weight))
        if known is None:
            weakref.finalize(weight, _COPIES.pop, id(weight), None)
        version = _version(weight)
        if known is None or known[0] != version:  # new, or changed in place since it was copied
            known = _COPIES[id(weight)] = (version, maker(weight, bias))
    copy = known[1]
    return copy if copy is not None else (weight, bias)


def _maker(weight: torch.Tensor):
    if weight.device.type != "cpu":
        return None
    if weight.dtype == torch.float32 and fp16_available():
        return _fp16_copy
    if weight.dtype == torch.bfloat16 and bf16_available():
        return _bf16_copy
    return None


def _fp16_copy(weight: torch.Tensor, bias: Optional[torch.Tensor]) -> Optional[Fp16Linear]:
    if not exact_in_float16(weight):
        return None
    try:
        packed = torch.fbgemm_pack_gemm_matrix_fp16(weight.detach())
    except RuntimeError:  # a CPU FBGEMM cannot run on
        return None
    bias = bias.detach() if bias is not None else torch.zeros(weight.shape[0], dtype=weight.dtype)
    return Fp16Linear(packed, bias, weight.numel() * 2)


def _bf16_copy(weight: torch.Tensor, bias: Optional[torch.Tensor]) -> Optional[Bf16Linear]:
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach().contiguous(), 1)  # 1: batch-1 rows
    except RuntimeError:  # a oneDNN build without this CPU's bf16 kernels
        return None
    return Bf16Linear(packed, bias.detach() if bias is not None else None, weight.numel() * 2)


def linear(hidden: torch.Tensor, weights) -> torch.Tensor:
    """hidden [..., in] -> [..., out] through a packed copy or (weight, bias)."""
    if isinstance(weights, Fp16Linear):
        return torch.fbgemm_linear_fp16_weight_fp32_activation(hidden.contiguous(), weights.packed, weights.bias)
    if isinstance(weights, Bf16Linear):
        return torch.ops.mkldnn._linear_pointwise(hidden.contiguous(), weights.packed, weights.bias, "none", [], "")
    return F.linear(hidden, *weights)


def weight_bytes(module: torch.nn.Module) -> int:
    """A module's weights in memory: its parameters plus the packed copies made of them."""
    return sum(p.numel() * p.element_size() for p in module.parameters()) + copy_bytes(module)


def _copies(module: torch.nn.Module) -> list:
    with _LOCK:
        copies = [_COPIES.get(id(p), (0, None))[1] for p in module.parameters()]
    return [c for c in copies if c is not None]


_MODULE_COPIES: "weakref.WeakKeyDictionary[torch.nn.Module, tuple[int, str]]" = weakref.WeakKeyDictionary()


def remember_module_copy(module: torch.nn.Module, nbytes: int, kind: str) -> None:
    """A copy of a whole model's weights made elsewhere (lab_kernel_runner.py), counted with its copies."""
    _MODULE_COPIES[module] = (nbytes, kind)


def forget_copies(module: torch.nn.Module) -> None:
    """Drop the packed copies of this module's weights (made again on next use): after tuning, the copies of the
    paths not chosen."""
    with _LOCK:
        _FORGOTTEN[0] += 1
        _PREPARED.pop(module, None)
        for p in module.parameters():
            _COPIES.pop(id(p), None)


# module -> {what: (copy settings, [(layer, its weight, version) read by build], what a runner reads)}: prepared()
_PREPARED: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()
_FORGOTTEN = [0]  # forget_copies calls so far: what was prepared before one may hold copies that are gone
_READING = threading.local()  # .layers: the list linear_weights appends to while prepared() builds


def prepared(module: torch.nn.Module, what: str, build: Callable[[], T]) -> T:
    """build() (what a runner reads of this module's weights: linear_weights of its layers), made once and handed
    to every later runner while it still holds: the same copy settings, no forget_copies since, and every layer
    build read still holding the same weight, unchanged in place. A run makes a fresh runner, and resolving each
    weight's copy costs more than a small model's whole step (a sampling test makes tens of thousands of runs)."""
    settings = (fp16_available(), bf16_available(), _FORGOTTEN[0])
    memo = _PREPARED.setdefault(module, {})
    known = memo.get(what)
    if known is not None and known[0] == settings and all(
            layer.weight is weight and _version(weight) == version for layer, weight, version in known[1]):
        return known[2]
    _READING.layers = read = []
    try:
        made = build()
    finally:
        _READING.layers = None
    memo[what] = (settings, [(layer, layer.weight, _version(layer.weight)) for layer in read], made)
    return made


def _version(weight: torch.Tensor) -> int:
    return -1 if weight.is_inference() else weight._version  # inference tensors keep no counter


def forget_module_copy(module: torch.nn.Module) -> None:
    _MODULE_COPIES.pop(module, None)


def copy_bytes(module: torch.nn.Module) -> int:
    """Bytes of the packed copies made so far for this module's weights."""
    return sum(c.nbytes for c in _copies(module)) + _MODULE_COPIES.get(module, (0, ""))[0]


def copy_kind(module: torch.nn.Module) -> Optional[str]:
    """What the runner label says of the copies: 'float16 weight copies' (with 'rows not exact here' where
    float16_rows_exact() is False), 'oneDNN-packed bfloat16 weights', or None (no copies)."""
    kinds = {type(c) for c in _copies(module)}
    if module in _MODULE_COPIES:
        return _MODULE_COPIES[module][1]
    if Fp16Linear in kinds:
        return "float16 weight copies" + ("" if float16_rows_exact() else " (rows not exact here)")
    if Bf16Linear in kinds:
        return "oneDNN-packed bfloat16 weights"
    return None
