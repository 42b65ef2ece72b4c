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
                   v_of_k: Callable[[int], float] = constant_v, ks: Sequence[int] = tuple(range(1, 9))
                   ) -> CheaperTarget:
    """Per format: bytes a token, the target step (measured where measured_step_s names the format's key, else
    modelled), c and the speedup over ks at acceptance alpha, and the best K. v_of_k: v(K) of a format-independent
    verification (measured v(K) of the path, or constant_v)."""
    measured = measured_step_s or {}
    points = []
    for fmt in formats:
        step = measured.get(fmt.key)
        step_s = step if step is not None else modelled_step_s(net, fmt, bandwidth, overhead_s)
        c = draft_token_s / step_s
        speedups = tuple(theoretical_speedup(alpha, k, c, v_of_k(k)) for k in ks)
        best = max(range(len(ks)), key=speedups.__getitem__)
        points.append(FormatPoint(fmt, bytes_per_token(net, fmt), step_s, step is not None, c, tuple(ks), speedups,
                                  ks[best], speedups[best], expected_tokens_per_forward(alpha, ks[best])))
    return CheaperTarget(alpha, draft_token_s, bandwidth, overhead_s, points)


def bytes_table(net: Network, formats: Sequence[WeightFormat] = FORMATS) -> list[tuple[str, float]]:
    """(format label, megabytes a token) for the memory views: what each format's weights weigh and read."""
    return [(fmt.label, bytes_per_token(net, fmt) / 1e6) for fmt in formats]


def steps_from_tuning(path) -> dict[str, float]:
    """{format key: seconds of its fastest measured one-token step} from a tuning record (runners/tuning.TunedPath:
    `tune` times every path of a model, interleaved): the block paths as "q4_1" / "q8_0", the float32 path (float16
    copies of the float weights, FBGEMM's or the lab kernels') as "f16"; candidates excluded or not timed are left out."""
    steps: dict[str, float] = {}
    for candidate in path.candidates:
        if candidate.excluded or candidate.step_ms is None:
            continue
        key = candidate.dtype if candidate.dtype in ("q4_1", "q8_0") else "f16" if candidate.dtype == "float32" else ""
        if key and candidate.step_ms / 1e3 < steps.get(key, float("inf")):
            steps[key] = candidate.step_ms / 1e3
    return steps
