"""Float32 linear layers that read their weights from float16 copies, on CPU, where that loses nothing.

Decoding reads every weight once per forward, so on a CPU its speed is memory bandwidth. On the 2-core
machine this project is built on, MKL's float32 GEMM streams ~11 GB/s for one row and slows 2-3x for
2 to 8 rows, the shapes speculative verification uses. FBGEMM's float16-weight GEMM
(torch.fbgemm_linear_fp16_weight_fp32_activation) reads half the bytes, widens them to float32 in
registers and keeps activations and sums in float32: SmolLM2-135M's 30 layers take ~15 ms instead of
~33 ms for one row, ~25 ms instead of ~83 ms for five (scripts/measure_fp16_weights.py measures it).

A matrix gets a float16 copy only when every one of its float32 values survives float32 -> float16 ->
float32 unchanged (SmolLM2's weights, dequantised from Q4_1 and stored as bfloat16, all do), so the
model computes with the same numbers; only the order of the sums differs from MKL's, as it would with
any other kernel. Copies are made once per weight tensor and shared by every runner (and every drafter
that shares the target's layers); they live as long as the weight. SPECDEC_FP16_WEIGHTS=0 switches
them off (every linear then goes through torch's own float32 GEMM).
"""
from __future__ import annotations

import os
import threading
import warnings
import weakref
from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message=r"fbgemm_\w+ is deprecated")  # no successor for float32 activations yet
_LOCK = threading.Lock()
# id(weight) -> (the weight's version counter when copied, its copy or None: not exact in float16)
_COPIES: dict[int, tuple[int, Optional["Fp16Linear"]]] = {}


class Fp16Linear(NamedTuple):
    packed: torch.Tensor  # FBGEMM's packed float16 matrix of a weight [out, in]
    bias: torch.Tensor  # [out]: the layer's bias, or zeros (FBGEMM needs one)
    nbytes: int  # float16 bytes of the copy


def enabled() -> bool:
    return (os.environ.get("SPECDEC_FP16_WEIGHTS", "1").strip().lower() not in {"0", "off", "false", "no"}
            and hasattr(torch, "fbgemm_pack_gemm_matrix_fp16")
            and "fbgemm" in torch.backends.quantized.supported_engines)


def exact_in_float16(weight: torch.Tensor) -> bool:
    return bool(torch.equal(weight.to(torch.float16).to(weight.dtype), weight))


def linear_weights(module: torch.nn.Linear):
    """What `linear` takes for this layer: an Fp16Linear where one can stand in for the float32 weight,
    else (weight, bias) for F.linear."""
    return weights_for(module.weight, module.bias)


def weights_for(weight: torch.Tensor, bias: Optional[torch.Tensor] = None):
    """linear_weights for a bare weight [out, in] and bias [out] (or None)."""
    if weight.device.type != "cpu" or weight.dtype != torch.float32 or not enabled():
        return weight, bias
    with _LOCK:
        known = _COPIES.get(id(weight))
        if known is None:
            weakref.finalize(weight, _COPIES.pop, id(weight), None)
        version = -1 if weight.is_inference() else weight._version  # inference tensors keep no counter
        if known is None or known[0] != version:  # new, or changed in place since it was copied
            known = _COPIES[id(weight)] = (version, _make_copy(weight, bias))
    copy = known[1]
    return copy if copy is not None else (weight, bias)


def _make_copy(weight: torch.Tensor, bias: Optional[torch.Tensor]) -> Optional[Fp16Linear]:
    if not exact_in_float16(weight):
        return None
    try:
        packed = torch.fbgemm_pack_gemm_matrix_fp16(weight.detach())
    except RuntimeError:  # a CPU FBGEMM cannot run on
        return None
    bias = bias.detach() if bias is not None else torch.zeros(weight.shape[0], dtype=weight.dtype)
    return Fp16Linear(packed, bias, weight.numel() * 2)


def linear(hidden: torch.Tensor, weights) -> torch.Tensor:
    """hidden [..., in] -> [..., out] through an Fp16Linear or (weight, bias)."""
    if isinstance(weights, Fp16Linear):
        return torch.fbgemm_linear_fp16_weight_fp32_activation(hidden.contiguous(), weights.packed, weights.bias)
    return F.linear(hidden, *weights)


def weight_bytes(module: torch.nn.Module) -> int:
    """A module's weights in memory: its parameters plus the float16 copies made of them."""
    return sum(p.numel() * p.element_size() for p in module.parameters()) + copy_bytes(module)


def copy_bytes(module: torch.nn.Module) -> int:
    """Bytes of the float16 copies made so far for this module's weights."""
    with _LOCK:
        copies = [_COPIES.get(id(p), (0, None))[1] for p in module.parameters()]
    return sum(c.nbytes for c in copies if c is not None)


def has_copies(module: torch.nn.Module) -> bool:
    return copy_bytes(module) > 0
