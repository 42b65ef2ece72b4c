"""The lesson a cheaper target teaches: bytes per token for each weight format, and how the best K and the speedup move
when the target's step gets cheaper while the drafter's does not. Plain functions over numbers (no UI, no models
loaded): the "Why this speedup?" tab and the memory views plot what they return.

A decoding step on a CPU reads every weight once, so its time follows the bytes of the weights (docs/engine.md): the
fetched SmolLM2 reads 539 MB a token as float32, 269 MB as float16, 143 MB as Q8_0 and 96 MB as the file's own Q4_1
(its embeddings, which are also its head, Q8_0). The drafter's cost per drafted token stays where it was (it reads its
own weights: an EAGLE head's layer and draft-vocabulary rows), so c = drafting time per token / target step grows as
the target gets cheaper, and with it the best K falls and the speedup shrinks: speedup(K) = E(α, K) / (K c + v(K)),
E = (1 − α^(K+1)) / (1 − α) (engine/theory.py).

Two sources for a format's target step, kept apart in the result: measured (a timed one-token forward of that path,
as `tune` times it; the caller passes the milliseconds it measured) and modelled (the bytes over a bandwidth, plus a
fixed per-step overhead: the cost model's roofline for a bandwidth-bound step, cost_model.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

from specdec.engine.theory import expected_tokens_per_forward, theoretical_speedup
from specdec.measure.cost_model import Network


@dataclass(frozen=True)
class WeightFormat:
    """How many bytes a weight takes in a format: the decoder layers' and the head's (a GGUF may differ per tensor)."""

    key: str  # "f32", "f16", "q8_0", "q4_1"
    label: str
    layer_bytes: float  # bytes per weight of the decoder layers' matrices
    head_bytes: float  # bytes per weight of the output head (and the tied embedding)


Q8_0_BYTES = 34 / 32  # a float16 scale and 32 int8 values a block
Q4_1_BYTES = 20 / 32  # a float16 scale and minimum and 32 4-bit values a block
FORMATS = (
    WeightFormat("f32", "float32", 4.0, 4.0),
    WeightFormat("f16", "float16 (from Q4_1)", 2.0, 2.0),
    WeightFormat("q8_0", "Q8_0 (requantised from Q4_1)", Q8_0_BYTES, Q8_0_BYTES),
    WeightFormat("q4_1", "Q4_1 as published (head Q8_0)", Q4_1_BYTES, Q8_0_BYTES),
)


def bytes_per_token(net: Network, fmt: WeightFormat) -> float:
    """Weight bytes one decoding step reads: every decoder layer's matrices and the head (cost_model.Network)."""
    return net.layers * net.layer_params * fmt.layer_bytes + (net.head_params + net.extra_params) * fmt.head_bytes


@dataclass(frozen=True)
class FormatPoint:
    """One weight format: its bytes a token, its target step, and speculation's figures at each K."""

    format: WeightFormat
    bytes_per_token: float
    step_s: float  # the target's one-token step
    step_measured: bool  # True: a measured step; False: the modelled one
    c: float  # drafting time per token / step_s
    ks: tuple[int, ...]
    speedups: tuple[float, ...]  # E(α, K) / (K c + v(K)) for each K in ks
    best_k: int
    best_speedup: float
    tokens_per_forward: float  # E(α, best_k)
    v_measured: bool = False  # True: v(K) of this format's own measured path; False: the format-independent v_of_k
    v_at_best: float = 1.0  # v(best_k)


@dataclass(frozen=True)
class CheaperTarget:
    """The lesson's figures: one FormatPoint per format, for one drafter (its α, its cost per drafted token)."""

    alpha: float
    draft_token_s: float
    bandwidth: float  # bytes/s the modelled steps assume
    overhead_s: float  # the modelled steps' fixed part
    points: list[FormatPoint] = field(default_factory=list)


def modelled_step_s(net: Network, fmt: WeightFormat, bandwidth: float, overhead_s: float) -> float:
    """A bandwidth-bound step: its weight bytes over the bandwidth, plus the fixed per-step overhead."""
    return bytes_per_token(net, fmt) / bandwidth + overhead_s


def constant_v(k: int) -> float:
    """v(K) = 1: the textbook verification (a (K+1)-token forward costs one step)."""
    return 1.0


def cheaper_target(net: Network, alpha: float, draft_token_s: float, bandwidth: float, overhead_s: float = 0.0,
                   formats: Sequence[WeightFormat] = FORMATS, measured_step_s: Optional[Mapping[str, float]] = None,
                   v_of_k: Callable[[int], float] = constant_v, ks: Sequence[int] = tuple(range(1, 9)),
                   measured_v: Optional[Mapping[str, Callable[[int], float]]] = None) -> CheaperTarget:
    """Per format: bytes a token, the target step (measured where measured_step_s names the format's key, else
    modelled), c and the speedup over ks at acceptance alpha, and the best K. v_of_k: v(K) of a format-independent
    verification (measured v(K) of the path, or constant_v); measured_v: {format key: v(K)} of a format's own measured
    path (v_from_tuning), which wins over v_of_k for that format."""
    measured, own_v = measured_step_s or {}, measured_v or {}
    points = []
    for fmt in formats:
        step = measured.get(fmt.key)
        step_s = step if step is not None else modelled_step_s(net, fmt, bandwidth, overhead_s)
        c = draft_token_s / step_s
        v = own_v.get(fmt.key, v_of_k)
        speedups = tuple(theoretical_speedup(alpha, k, c, v(k)) for k in ks)
        best = max(range(len(ks)), key=speedups.__getitem__)
        points.append(FormatPoint(fmt, bytes_per_token(net, fmt), step_s, step is not None, c, tuple(ks), speedups,
                                  ks[best], speedups[best], expected_tokens_per_forward(alpha, ks[best]),
                                  fmt.key in own_v, v(ks[best])))
    return CheaperTarget(alpha, draft_token_s, bandwidth, overhead_s, points)


def bytes_table(net: Network, formats: Sequence[WeightFormat] = FORMATS) -> list[tuple[str, float]]:
    """(format label, megabytes a token) for the memory views: what each format's weights weigh and read."""
    return [(fmt.label, bytes_per_token(net, fmt) / 1e6) for fmt in formats]


def fastest_by_format(path) -> dict:
    """{format key: the candidate of a tuning record (runners/tuning.TunedPath: `tune` times every path of a model,
    interleaved) with the fastest measured one-token step}: the block paths as "q4_1" / "q8_0", the float32 path
    (float16 copies of the float weights, FBGEMM's or the lab kernels') as "f16"; candidates excluded or not timed are
    left out."""
    fastest: dict = {}
    for candidate in path.candidates:
        if candidate.excluded or candidate.step_ms is None:
            continue
        key = candidate.dtype if candidate.dtype in ("q4_1", "q8_0") else "f16" if candidate.dtype == "float32" else ""
        if key and candidate.step_ms < getattr(fastest.get(key), "step_ms", float("inf")):
            fastest[key] = candidate
    return fastest


def steps_from_tuning(path) -> dict[str, float]:
    """{format key: seconds of its fastest measured one-token step} (fastest_by_format)."""
    return {key: candidate.step_ms / 1e3 for key, candidate in fastest_by_format(path).items()}


def v_from_tuning(path, verify_rows: int = 5, wide_rows: int = 9) -> dict[str, Callable[[int], float]]:
    """{format key: v(K)} of the same candidates: a (K+1)-row forward over the one-row step, from the forwards `tune`
    times (1, verify_rows = runners.tuning.PROBE_K + 1 and wide_rows = WIDE_ROWS rows), linear between them and along
    the last segment beyond; a format whose verification was not timed is left out."""
    curves = {}
    for key, candidate in fastest_by_format(path).items():
        if candidate.verify_ms is None:
            continue
        points = [(1, 1.0), (verify_rows, candidate.verify_ms / candidate.step_ms)]
        if candidate.wide_ms is not None:
            points.append((wide_rows, candidate.wide_ms / candidate.step_ms))
        curves[key] = _piecewise_linear(points)
    return curves


def _piecewise_linear(points: list[tuple[int, float]]) -> Callable[[int], float]:
    def v(k: int) -> float:
        rows = k + 1
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            if rows <= x1 or (x1, y1) == points[-1]:
                return y0 + (y1 - y0) * (rows - x0) / (x1 - x0)
        return points[-1][1]
    return v


def format_key(weights_label: str) -> Optional[str]:
    """The FORMATS key of a run's weights (LoadedModel.weights_label): 'Q4_1 as published' -> 'q4_1', 'Q8_0 …' ->
    'q8_0', 'float16 from Q4_1' -> 'f16' (the lab's float path multiplies float16 copies), 'float32' -> 'f32'; None for
    weights the lesson has no format for (bfloat16, a GPU's float16)."""
    label = (weights_label or "").strip()
    for prefix, key in (("Q4_1", "q4_1"), ("Q8_0", "q8_0"), ("float16 from", "f16"), ("float32", "f32")):
        if label.startswith(prefix):
            return key
    return None


def tuned_record(name: str, source: str):
    """The measured `auto`'s cached tuning record of a target on this CPU, its GGUF block paths included where it has
    them (the key they were measured under); None when `tune` has not measured it here. Reads, never measures."""
    import torch

    from specdec.models.gguf_files import block_loaders
    from specdec.runners import tuning

    device = torch.device("cpu")
    if not tuning.enabled():
        return None
    return tuning.cached_for(source, device, blocks=sorted(block_loaders(name, source, device, None)))
