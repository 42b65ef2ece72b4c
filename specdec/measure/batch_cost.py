"""The cost model with a batch: what speculative decoding gains when B requests share the engine's steps.

A serving engine runs the B sequences it holds in one forward per step. Target-only, a step is one forward over
B rows (one new token per sequence) that reads the weights once for all B and each sequence's KV cache; it
emits B tokens. Speculative, a step drafts K tokens per sequence and verifies them in one forward over B·(K + 1)
rows; it emits B·E tokens, E the tokens per verification step of one sequence (vLLM's mean acceptance length).
At B = 1 the verification forward reads the same weights as a target-only step for K more rows of work: a
decode step is bandwidth-bound (or, on a CPU, bound by how fast its BLAS runs a few rows), so the extra rows are
nearly free and the speedup approaches E. As B grows, the target-only step's rows grow too and its weights'
cost is shared by more tokens, while the verification forward carries K + 1 times the rows: once its rows pass
the device's ridge point (compute-bound) its time grows with its rows, and the speedup tends to
E / (K + 1) plus the drafting: below 1 unless nearly every draft is accepted. `predict_load` gives that curve:

    speedup(B) = E · t_target(B rows) / (t_target(B·(K + 1) rows) + t_draft(B, K))

with the forward times of cost_model.forward_cost (the roofline on the GPU presets, the measured row curve on
this machine) and the drafting time of cost_model.DraftShape.step_s, both with `batch=B`. Every sequence is taken
to draft the full K (true of draft models and EAGLE; prompt lookup drafts fewer where it finds no match, which
makes its verification cheaper than this). Plain functions and frozen dataclasses: the curve's data, drawn over
the measured points (specdec/vllm/load.py) by whoever shows them.

The per-forward overhead is the device's (devices.py: measured for the lab's runner on this machine, assumed on
the GPU presets). A serving engine's step costs more than a forward (its scheduler, sampling, the API):
`calibrated_overhead` takes it from a measured target-only step at concurrency 1, so the curve for a server
starts where its measurement does.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from specdec.measure.cost_model import CONTEXT, Cost, DraftShape, Network, forward_cost
from specdec.measure.device_presets import Device

CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class LoadPoint:
    """One concurrency on one device: a target-only step and a speculative step of the whole batch."""

    concurrency: int
    target_step: Cost  # the target-only step: B rows
    verify: Cost  # the speculative step's target forward: B·(K + 1) rows
    draft_s: float  # the speculative step's drafting, K tokens for each of the B sequences
    tokens_per_step: float  # E, per sequence

    @property
    def baseline_tokens_per_s(self) -> float:
        return self.concurrency / self.target_step.time_s

    @property
    def speculative_tokens_per_s(self) -> float:
        return self.concurrency * self.tokens_per_step / (self.verify.time_s + self.draft_s)

    @property
    def speedup(self) -> float:
        return self.speculative_tokens_per_s / self.baseline_tokens_per_s

    @property
    def verify_bound(self) -> str:
        """"compute" or "bandwidth": what bounds the verification forward on the roofline."""
        return self.verify.bound

    def to_dict(self) -> dict:
        return {"concurrency": self.concurrency, "speedup": self.speedup,
                "baseline_tokens_per_s": self.baseline_tokens_per_s,
                "speculative_tokens_per_s": self.speculative_tokens_per_s,
                "target_step_ms": self.target_step.time_s * 1e3, "verify_ms": self.verify.time_s * 1e3,
                "draft_ms": self.draft_s * 1e3, "verify_bound": self.verify_bound,
                "target_step_bound": self.target_step.bound, "verify_intensity": self.verify.intensity}


@dataclass(frozen=True)
class LoadCurve:
    """The predicted speedup against concurrency for one target, drafter, K and device."""

    device: str
    dtype: str
    k: int
    tokens_per_step: float
    context: int
    overhead_s: float  # per forward, as used (the device's, or calibrated)
    ridge: float  # the device's FLOP per byte where its roof turns compute-bound (this dtype)
    points: tuple[LoadPoint, ...]

    @property
    def crossover(self) -> Optional[int]:
        """The lowest concurrency predicted at or below 1× (None: speculation pays at every one)."""
        return next((p.concurrency for p in self.points if p.speedup <= 1.0), None)

    @property
    def compute_bound_from(self) -> Optional[int]:
        """The lowest concurrency whose verification forward is compute-bound on the roofline (None: none is)."""
        return next((p.concurrency for p in self.points if p.verify_bound == "compute"), None)

    def to_dict(self) -> dict:
        return {"device": self.device, "dtype": self.dtype, "k": self.k, "tokens_per_step": self.tokens_per_step,
                "context": self.context, "overhead_ms": self.overhead_s * 1e3, "ridge_flop_per_byte": self.ridge,
                "crossover": self.crossover, "compute_bound_from": self.compute_bound_from,
                "points": [p.to_dict() for p in self.points]}


def with_overhead(device: Device, overhead_s: Optional[float]) -> Device:
    """`device` with a per-forward overhead of `overhead_s` in all (None: unchanged)."""
    if overhead_s is None:
        return device
    return replace(device, forward_overhead_s=overhead_s, layer_overhead_s=0.0)


def calibrated_overhead(target: Network, device: Device, dtype: str, measured_step_s: float,
                        context: int = CONTEXT) -> float:
    """The per-step overhead that makes the model's target-only step at concurrency 1 take `measured_step_s` (a
    server's measured time per output token at concurrency 1): the measured step less the model's bytes and FLOPs
    time, never below 0."""
    return max(0.0, measured_step_s - forward_cost(target, device, dtype, 1, context).work_s)


def load_point(target: Network, draft: DraftShape, device: Device, dtype: str, k: int, tokens_per_step: float,
               concurrency: int, context: int = CONTEXT, drafted_per_step: Optional[float] = None) -> LoadPoint:
    """One concurrency: the batch's target-only step, its verification forward and its drafting. drafted_per_step:
    the drafts a sequence's step verifies on average (default K; prompt lookup drafts fewer where it finds no match),
    so the verification forward has B·(1 + drafted) rows."""
    drafted = float(k if drafted_per_step is None else drafted_per_step)
    if concurrency < 1 or k < 1 or not 0.0 <= drafted <= k:
        raise ValueError(f"concurrency and K must be at least 1 and the drafts per step 0..K, got {concurrency}, {k} "
                         f"and {drafted:g}")
    if not 1.0 <= tokens_per_step <= drafted + 1:
        raise ValueError(f"tokens per step must lie in 1..{drafted + 1:g} (1 + drafts per step), got {tokens_per_step}")
    return LoadPoint(concurrency, forward_cost(target, device, dtype, 1, context, batch=concurrency),
                     forward_cost(target, device, dtype, 1 + drafted, context, batch=concurrency),
                     draft.step_s(device, dtype, k, context, batch=concurrency), tokens_per_step)


def predict_load(target: Network, draft: DraftShape, device: Device, dtype: str, k: int, tokens_per_step: float,
                 concurrencies=CONCURRENCIES, context: int = CONTEXT, overhead_s: Optional[float] = None,
                 drafted_per_step: Optional[float] = None) -> LoadCurve:
    """The speedup against concurrency (module docstring). tokens_per_step: E, tokens per step of one sequence (vLLM's
    mean acceptance length, or theory.expected_tokens_per_forward(α, K)); overhead_s: the per-forward overhead to use
    instead of the device's (calibrated_overhead), the same on both sides; drafted_per_step: load_point's."""
    used = with_overhead(device, overhead_s)
    points = tuple(load_point(target, draft, used, dtype, k, tokens_per_step, b, context, drafted_per_step)
                   for b in sorted(set(int(c) for c in concurrencies)))
    overhead = used.forward_overhead_s + target.layers * used.layer_overhead_s
    return LoadCurve(device.label, dtype, k, tokens_per_step, context, overhead, used.peak(dtype) / used.bandwidth,
                     points)


def curve_rows(curve: LoadCurve) -> list[dict]:
    """The curve as flat rows (a table or a CSV): the curve's labels repeated on every point."""
    labels = {key: value for key, value in curve.to_dict().items() if key != "points"}
    return [{**labels, **point.to_dict()} for point in curve.points]
