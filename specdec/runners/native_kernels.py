"""The lab's CPU kernels (specdec/runners/native/decode_kernels.c): built once per machine with its C compiler, loaded
with ctypes, and the float16 weight packing they read.

Why a compiled kernel: a decoding step of a small model on a 2-core CPU is memory-bandwidth bound, torch's CPU
products of one row run on one thread, and the ~600 small tensor ops around them cost a third of the step (profile
in docs/vllm.md); decode_kernels.c streams each product's weights on both cores and does the small ops inside the
same call. Which path is fastest on a machine is measured (tuning.py), never inferred from its flags.

Building: `cc -O3 -march=native -ffp-contract=off` into SPECDEC_CACHE/kernels/, named by a hash of the source, the
compiler command and the CPU (model and flags), so a different machine or a changed source builds afresh. Where
there is no x86-64 CPU with AVX2, F16C and FMA, no compiler, or the build fails, `available()` is False and
`unavailable_reason()` says why; nothing else changes (the static runner's torch path runs). SPECDEC_LAB_KERNELS=0
turns them off. The C source has two code paths, chosen by the compiler's target: AVX-512 (16-float vectors; row
tiles of up to 6 rows x 2 vectors, and 7-12 rows x 2) where -march=native has it, else AVX2 (8-float vectors; 6 rows x
2 vectors, 7-12 rows x 1); SPECDEC_LAB_KERNELS_AVX2=1 builds the AVX2 path on any CPU, to measure it where AVX-512
would be chosen. Both compute every output as the same chain of fused multiply-adds, so both are row-exact.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple, Optional

from specdec import config
from specdec.paths import cache_dir
from specdec.runners.packed_weights import cpu_flags, cpu_name, exact_in_float16

import torch

SOURCE = Path(__file__).with_name("native") / "decode_kernels.c"
SOURCES = (SOURCE, SOURCE.with_name("block_products.c"))  # the second is #included by the first: one compile unit
NEEDED_FLAGS = ("avx2", "f16c", "fma")
_LOCK = threading.Lock()
_STATE: dict = {}  # "library": the loaded CDLL or None; "reason": why None


def enabled() -> bool:
    return config.get("SPECDEC_LAB_KERNELS")


def compiler() -> Optional[str]:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


NATIVE = ("-march=native",)  # the build machine's vector extensions: AVX-512 where it has them, else AVX2
AVX2 = ("-mavx2", "-mfma", "-mf16c")  # the AVX2 code path on any x86-64 CPU that has these (tests build it too)


def build_command(cc: str, source: Path, output: Path, target: tuple[str, ...] = NATIVE) -> list[str]:
    return [cc, "-O3", *target, "-ffp-contract=off", "-fPIC", "-shared", str(source), "-o", str(output),
            "-lpthread", "-lm"]


def target() -> tuple[str, ...]:
    """The vector target of this process's build: the machine's own, or AVX2 where SPECDEC_LAB_KERNELS_AVX2 asks."""
    return AVX2 if config.get("SPECDEC_LAB_KERNELS_AVX2") else NATIVE


def library_path(cc: str) -> Path:
    """Where the build for this source, compiler, target and CPU lives."""
    digest = hashlib.sha256(b"".join(source.read_bytes() for source in SOURCES))
    digest.update(" ".join(build_command(cc, Path("s"), Path("o"), target())).encode())
    digest.update(f"{cpu_name()} {sorted(cpu_flags())} {platform.machine()}".encode())
    return cache_dir() / "kernels" / f"decode_kernels-{digest.hexdigest()[:16]}.so"


def library():
    """The loaded kernels, built on first use; None where they cannot run here (unavailable_reason says why)."""
    with _LOCK:
        if "library" not in _STATE:
            _STATE["library"], _STATE["reason"] = _load()
        return _STATE["library"]


def available() -> bool:
    return enabled() and library() is not None


def build_id() -> str:
    """'' where the kernels do not run here, else their build's name (the source, compiler command, target and CPU
    hashed): measurements keyed by it (tuning.json) are taken again when the kernels change."""
    if not available():
        return ""
    return library_path(compiler()).stem.rsplit("-", 1)[-1]


def unavailable_reason() -> str:
    """'' where the kernels run here, else one line saying why not."""
    if not enabled():
        return "lab kernels: turned off (SPECDEC_LAB_KERNELS=0)"
    library()
    return _STATE.get("reason", "")


def _load():
    if platform.machine() not in ("x86_64", "AMD64"):
        return None, f"lab kernels: written for x86-64 CPUs, this one is {platform.machine()}"
    missing = [flag for flag in NEEDED_FLAGS if flag not in cpu_flags()]
    if missing:
        return None, f"lab kernels: this CPU lacks {', '.join(missing)}"
    cc = compiler()
    if cc is None:
        return None, "lab kernels: no C compiler (cc, gcc or clang) on this machine"
    path = library_path(cc)
    if not path.exists():
        try:
            _build(cc, path, target())
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"lab kernels: the build failed ({_first_line(exc)})"
    try:
        return _declare(ctypes.CDLL(str(path))), ""
    except OSError as exc:
        return None, f"lab kernels: the build does not load ({_first_line(exc)})"


def _build(cc: str, path: Path, target: tuple[str, ...] = NATIVE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as folder:
        partial = Path(folder) / path.name
        done = subprocess.run(build_command(cc, SOURCE, partial, target), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise subprocess.SubprocessError(done.stderr.strip() or f"exit {done.returncode}")
        os.replace(partial, path)  # whole or absent: another process may load it at any moment


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def build_and_load(path: Path, target: tuple[str, ...]):
    """A build for another vector target (tests: the AVX2 path on an AVX-512 machine), loaded."""
    _build(compiler(), path, target)
    return _declare(ctypes.CDLL(str(path)))


class Layer(ctypes.Structure):
    """decode_kernels.c's layer_t: one decoder layer's packed weights and one sequence's cache (addresses)."""
    _fields_ = [
        ("input_norm", ctypes.c_void_p), ("input_eps", ctypes.c_float), ("qkv", ctypes.c_void_p),
        ("qkv_bias", ctypes.c_void_p), ("o", ctypes.c_void_p), ("o_bias", ctypes.c_void_p),
        ("post_norm", ctypes.c_void_p), ("post_eps", ctypes.c_float), ("gated", ctypes.c_void_p),
        ("gated_bias", ctypes.c_void_p), ("down", ctypes.c_void_p), ("down_bias", ctypes.c_void_p),
        ("keys", ctypes.c_void_p), ("values", ctypes.c_void_p),
        ("given_input", ctypes.c_void_p), ("given_width", ctypes.c_int),  # NULL: q, k, v project input_norm(hidden)
        # NULL: float16 groups; else the matrix is int8 rows with these scales (a drafter's layer)
        ("qkv_scales", ctypes.c_void_p), ("o_scales", ctypes.c_void_p), ("gated_scales", ctypes.c_void_p),
        ("down_scales", ctypes.c_void_p),
        # 0: float16 groups (int8 rows where scales are given); else the matrix is a GGUF's blocks (block_weights.py)
        ("qkv_format", ctypes.c_int), ("o_format", ctypes.c_int), ("gated_format", ctypes.c_int),
        ("down_format", ctypes.c_int)]


class Shape(ctypes.Structure):
    """decode_kernels.c's shape_t."""
    _fields_ = [("width", ctypes.c_int), ("heads", ctypes.c_int), ("kv_heads", ctypes.c_int),
                ("head_dim", ctypes.c_int), ("inner", ctypes.c_int), ("cache_len", ctypes.c_int),
                ("scale", ctypes.c_float)]


def _declare(lib):
    pointer, integer, real = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
    lib.sd_linear.argtypes = [pointer, integer, integer, pointer, pointer, integer, pointer, pointer, integer]
    lib.sd_attention.argtypes = [pointer, integer, integer, integer, integer, pointer, pointer, integer, integer,
                                 pointer, real, pointer]
    lib.sd_attention.restype = integer
    lib.sd_exp.argtypes = [pointer, integer, pointer]
    lib.sd_linear_int8.argtypes = [pointer, integer, integer, pointer, pointer, integer, pointer, integer]
    lib.sd_linear_int8.restype = integer
    lib.sd_softmax_first.argtypes = [pointer, integer, integer, pointer, pointer, integer]
    lib.sd_softmax_first.restype = integer
    lib.sd_linear_blocks.argtypes = [pointer, integer, integer, pointer, integer, integer, pointer, integer]
    lib.sd_linear_blocks.restype = integer
    lib.sd_block_rows.argtypes = [pointer, integer, integer, pointer, integer, pointer]
    lib.sd_block_rows.restype = None
    for name in ("sd_linear", "sd_exp"):
        getattr(lib, name).restype = None
    lib.sd_layers.argtypes = [ctypes.POINTER(Layer), integer, ctypes.POINTER(Shape), pointer, integer, integer,
                              pointer, pointer, pointer, ctypes.POINTER(ctypes.c_void_p), integer]
    lib.sd_layers.restype = integer
    return lib


@functools.cache
def group() -> int:
    """Output rows per packed group (the kernels' GROUP)."""
    lib = library()
    return int(lib.sd_group()) if lib is not None else 32


@functools.cache
def lanes() -> int:
    """Floats per vector register of the build: attention's head size must be a multiple of it."""
    lib = library()
    return int(lib.sd_lanes()) if lib is not None else 16


# --- packing ---------------------------------------------------------------------------------------------------

def packable(*weights: torch.Tensor) -> bool:
    """Whether these float32 CPU matrices [out_i, in], stacked along out, can be packed: every value a float16 value
    (so the kernels compute with the weights' own numbers) and the stacked row count a multiple of the group."""
    return (all(w.device.type == "cpu" and w.dtype == torch.float32 and w.dim() == 2 and exact_in_float16(w)
                for w in weights) and sum(w.shape[0] for w in weights) % group() == 0)


def pack(*weights: torch.Tensor) -> torch.Tensor:
    """Matrices [N_i, K] stacked along N -> float16 groups [sum(N_i) / GROUP, K, GROUP] (contiguous)."""
    stacked = torch.cat([w.detach() for w in weights]).to(torch.float16)
    rows, width = stacked.shape
    return stacked.view(rows // group(), group(), width).transpose(1, 2).contiguous()


def product(x: torch.Tensor, packed: torch.Tensor, threads: int) -> torch.Tensor:
    """x [n, K] float32 times a packed matrix (pack(): [N / GROUP, K, GROUP]) -> [n, N] float32, on `threads` (1 or 2)
    threads of the kernels; the library must be available."""
    x = x.float().contiguous()
    groups, width, per_group = packed.shape
    out = x.new_empty((x.shape[0], groups * per_group))
    library().sd_linear(x.data_ptr(), x.shape[0], width, packed.data_ptr(), None, out.shape[1], None, out.data_ptr(),
                        threads)
    return out


class Int8Rows(NamedTuple):
    """A matrix [N, K] as int8 rows (decode_kernels.c's vocabulary): values [N / GROUP, K' / 2, GROUP, 2] int8 (K'
    = K rounded up to even, the last column zeros where K is odd) and a float32 scale per output row [N]; row n is
    its int8 values times scales[n]."""
    values: torch.Tensor
    scales: torch.Tensor
    width: int  # K

    @property
    def nbytes(self) -> int:
        return self.values.numel() + self.scales.numel() * self.scales.element_size()

    def matrix(self) -> torch.Tensor:
        """The [N, K] float64 matrix these rows stand for."""
        groups, pairs, per_group, _ = self.values.shape
        values = self.values.permute(0, 2, 1, 3).reshape(groups * per_group, 2 * pairs)[:, :self.width]
        return values.double() * self.scales.double().unsqueeze(1)


def pack_int8(weight: torch.Tensor) -> Int8Rows:
    """weight [N, K] (N a multiple of the group) -> its int8 rows: each row rounded to the nearest of 255 even steps
    from -max|row| to +max|row| (half the bytes of float16; for a drafter's products, which need not be exact)."""
    weight = weight.detach().float()
    scales = weight.abs().amax(dim=1) / 127  # [N]
    values = (weight / scales.clamp(min=torch.finfo(torch.float32).tiny).unsqueeze(1)).round().clamp(-127, 127)
    rows, width = weight.shape
    if width % 2:
        values = torch.cat([values, values.new_zeros(rows, 1)], dim=1)
    packed = values.to(torch.int8).view(rows // group(), group(), values.shape[1] // 2, 2).permute(0, 2, 1, 3)
    return Int8Rows(packed.contiguous(), scales.contiguous(), width)


def pack_gated_int8(gate: torch.Tensor, up: torch.Tensor) -> Int8Rows:
    """A gated pair as int8 rows: gate group j, then up group j, for every j (as pack_gated), with their scales."""
    gate_rows, up_rows = pack_int8(gate), pack_int8(up)
    values = torch.stack([gate_rows.values, up_rows.values], dim=1).flatten(0, 1).contiguous()
    scales = torch.stack([gate_rows.scales.view(-1, group()), up_rows.scales.view(-1, group())], dim=1).flatten()
    return Int8Rows(values, scales.contiguous(), gate_rows.width)


def product_int8(x: torch.Tensor, rows: Int8Rows, threads: int) -> torch.Tensor:
    """x [n, K] float32 times int8 rows (pack_int8) -> [n, N] float32, on `threads` (1 or 2) threads of the kernels:
    each row of x is rounded to int16 steps of its largest magnitude and the sums are exact integers, so a row's
    result does not depend on the rows beside it."""
    x = x.float()
    groups, pairs, per_group, _ = rows.values.shape
    if x.shape[1] < 2 * pairs:  # an odd K: the zero column the rows were padded with
        x = torch.cat([x, x.new_zeros(x.shape[0], 2 * pairs - x.shape[1])], dim=1)
    x = x.contiguous()
    out = x.new_empty((x.shape[0], groups * per_group))
    if library().sd_linear_int8(x.data_ptr(), x.shape[0], x.shape[1], rows.values.data_ptr(), rows.scales.data_ptr(),
                                out.shape[1], out.data_ptr(), threads):
        raise MemoryError("the lab kernels could not allocate their scratch for this product")
    return out


def softmax_first(logits: torch.Tensor, softmax: bool = True, threads: int = 1):
    """logits [rows, V] float32 on the CPU -> (the first index of each row's largest value [rows] int64, each row's
    softmax [rows, V] or None when not asked), in one pass of the kernels; None where the library is missing or a
    row holds a value that is not finite (torch's max and softmax define those)."""
    lib = library()
    if lib is None or logits.dtype != torch.float32 or logits.device.type != "cpu" or logits.dim() != 2:
        return None
    logits = logits.contiguous()
    first = torch.empty(logits.shape[0], dtype=torch.int64)
    probs = torch.empty_like(logits) if softmax else None
    if lib.sd_softmax_first(logits.data_ptr(), logits.shape[0], logits.shape[1],
                            probs.data_ptr() if probs is not None else None, first.data_ptr(), threads):
        return None
    return first, probs


def pack_gated(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """A gated pair: gate group j, then up group j, for every j -> [2 N / GROUP, K, GROUP]."""
    gate_groups, up_groups = pack(gate), pack(up)
    return torch.stack([gate_groups, up_groups], dim=1).flatten(0, 1).contiguous()
