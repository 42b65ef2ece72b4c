"""The cost model behind "Why this speedup?": from the models' shapes, a dtype and a device (devices.py),
the time of a forward over n new tokens and what bounds it; from those, c and v(K), and the speedup
through specdec/engine/theory.py's formulas. Plain dataclasses; no UI.

A forward over n new tokens with `context` positions already in the KV cache:
  bytes  = weights (every matmul weight, read once: decoder layers, output head, a drafter's own blocks)
         + KV cache (every layer's keys and values of context + n positions, read)
         + activations (each matmul reads its n input rows and writes its n output rows; the logits,
           float32, pass LOGIT_PASSES times: the head writes them, softmax reads and rewrites them, the
           trace's top-k reads them)
  FLOPs  = 2 × matmul weights × rows + attention (QKᵀ and AV: 4 × heads × head_dim per attended position)
  time   = max(bytes / bandwidth, FLOPs / peak) + overhead (per forward + per decoder layer, devices.py)
On a device with a measured row curve (this machine, devices.py) the weight products are timed by it instead:
  time   = weight bytes × seconds per weight byte at the products' rows (n; the head: its logit rows)
         + max((KV cache + logits) bytes / bandwidth, attention FLOPs / peak) + overhead
(the products' own activations are part of what the curve measured).
Intensity = FLOPs / bytes; a forward is bandwidth-bound when its memory time exceeds its compute time
(its intensity lies below the device's ridge point, peak / bandwidth), else compute-bound.

c(K) = a step's drafting time / K / a target-only step (1-token forward); v(K) = a (K+1)-token target
forward / a 1-token one: theory.py's c and v(K), predicted instead of measured.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Optional

from specdec.engine.theory import relative_errors, theoretical_speedup
from specdec.errors import ModelLoadError
from specdec.measure.device_presets import THIS_MACHINE, Device
from specdec.models.memory import config_value

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
LOGIT_PASSES = 4
LOGIT_BYTES = 4  # the engine turns logits into float32 (backend.py)
CONTEXT = 256  # positions in the cache while decoding, and the prefill's length, when no prompt is given


@dataclass(frozen=True)
class Network:
    """The shape of a Llama-like network, as far as its cost goes."""

    name: str
    layers: int  # decoder layers run per forward (each with its KV cache and its per-layer overhead)
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    head_rows: int  # output-head rows computed per position: the vocabulary, or a drafter's draft vocabulary
    extra_params: int = 0  # matmul weights outside decoder layers and head (EAGLE's fc, Medusa's blocks)

    def linears(self) -> list[tuple[int, int]]:
        """(inputs, outputs) of each matmul in one decoder layer: q, k, v, o, gate, up, down."""
        d, q, kv, i = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        return [(d, q), (d, kv), (d, kv), (q, d), (d, i), (d, i), (i, d)]

    @property
    def layer_params(self) -> int:
        return sum(a * b for a, b in self.linears())

    @property
    def head_params(self) -> int:
        return self.head_rows * self.hidden

    @property
    def params(self) -> int:
        """Matmul weights a forward reads (the input embedding, of which it reads n rows, is left out)."""
        return self.layers * self.layer_params + self.head_params + self.extra_params


def network_from_config(config, name: str) -> Network:
    """A Llama-like transformers config (hidden size, layers, heads, kv heads, intermediate size, vocab)."""
    hidden = config_value(config, "hidden_size", "n_embd", "d_model")
    layers = config_value(config, "num_hidden_layers", "n_layer", "num_layers")
    heads = config_value(config, "num_attention_heads", "n_head")
    vocab = config_value(config, "vocab_size")
    if not (hidden and layers and heads and vocab):
        raise ModelLoadError(f"{name}'s config does not give its hidden size, layers, heads and vocabulary: "
                             "no cost model for it")
    intermediate = config_value(config, "intermediate_size", "n_inner") or 4 * hidden
    return Network(name, layers, hidden, heads, config_value(config, "num_key_value_heads") or heads,
                   config_value(config, "head_dim") or hidden // heads, intermediate, vocab)


@dataclass(frozen=True)
class Cost:
    """One forward on one device: its bytes and FLOPs and the three parts of its time."""

    tokens: int
    bytes: float
    flops: float
    memory_s: float  # bytes / bandwidth
    compute_s: float  # FLOPs / peak
    overhead_s: float
    measured_s: Optional[float] = None  # row-curve devices: the weight products by the curve + the rest's roofline

    @property
    def work_s(self) -> float:
        """Its bytes' and FLOPs' time: the row curve's where the device has one, else the roofline's."""
        return max(self.memory_s, self.compute_s) if self.measured_s is None else self.measured_s

    @property
    def time_s(self) -> float:
        return self.work_s + self.overhead_s

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.memory_s else "bandwidth"

    @property
    def overhead_share(self) -> float:
        return self.overhead_s / self.time_s

    @property
    def attained_flops(self) -> float:
        """FLOP/s including the overhead (on a roofline: below the roof by the overhead's share)."""
        return self.flops / self.time_s


def forward_cost(net: Network, device: Device, dtype: str, tokens: int, context: int = CONTEXT,
                 logit_rows: Optional[int] = None, batch: int = 1) -> Cost:
    """A forward over `tokens` new positions after `context` cached ones; logits for `logit_rows` of them
    (default: all; a prefill computes the last one only). batch: that many sequences in the one forward, each with
    its own cache (the weights are read once for all; batch_cost.py prices serving under load with it)."""
    size = DTYPE_BYTES[dtype]
    rows = batch * (tokens if logit_rows is None else logit_rows)
    weights = net.params * size
    kv = batch * net.layers * 2 * net.kv_heads * net.head_dim * (context + tokens) * size
    activations = batch * tokens * net.layers * sum(a + b for a, b in net.linears()) * size
    logits = rows * net.head_rows * LOGIT_BYTES * LOGIT_PASSES
    attended = batch * (tokens * context + tokens * (tokens + 1) // 2)  # causal: new token i also sees 0..i
    attention = net.layers * 4 * net.heads * net.head_dim * attended
    flops = 2 * (batch * tokens * (net.layers * net.layer_params + net.extra_params) + rows * net.head_params) \
        + attention
    total = weights + kv + activations + logits
    overhead = device.forward_overhead_s + net.layers * device.layer_overhead_s
    peak = device.peak(dtype)
    measured, per_byte = None, device.weight_byte_s
    if per_byte(dtype, batch * tokens) is not None:
        body = (net.layers * net.layer_params + net.extra_params) * size
        products = body * per_byte(dtype, batch * tokens) + net.head_params * size * per_byte(dtype, rows)
        measured = products + max((kv + logits) / device.bandwidth, attention / peak)
    return Cost(tokens, total, flops, total / device.bandwidth, flops / peak, overhead, measured)


# --- drafters -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DraftShape:
    name: str
    family: str
    network: Optional[Network]  # None: no network (prompt lookup: a search through the token ids)
    one_call: bool = False  # all K tokens from one call (Medusa's heads); otherwise one call per drafted token

    def step_s(self, device: Device, dtype: str, k: int, context: int = CONTEXT, batch: int = 1) -> float:
        """Seconds to draft k tokens (for each of `batch` sequences at once)."""
        if self.network is None or k <= 0:
            return 0.0
        if self.one_call:
            return forward_cost(self.network, device, dtype, 1, context, logit_rows=k, batch=batch).time_s
        return k * forward_cost(self.network, device, dtype, 1, context, batch=batch).time_s


def shipped_shape(spec, meta: dict, target: Network) -> DraftShape:
    """A named drafter on its target's shape: what its family says it runs per drafted token (Drafter.cost_shape,
    which raises NoCostModel, a ValueError, where the roofline model cannot price it)."""
    shape = spec.drafter.cost_shape(spec, meta, target.hidden)
    if not shape.network:
        return DraftShape(spec.name, spec.family, None)
    network = replace(target, name=spec.name, layers=shape.layers,
                      head_rows=shape.head_rows if shape.head_rows is not None else target.head_rows,
                      intermediate=shape.intermediate or target.intermediate, extra_params=shape.extra_params)
    return DraftShape(spec.name, spec.family, network, one_call=shape.one_call)


# --- shapes by name ---------------------------------------------------------------------------------------

def model_source(name: str, allow_local_paths: bool = True) -> str:
    """A model's folder (or cached hub id) without fetching or loading anything."""
    from specdec.models import fetch
    from specdec.models.loading import locate

    if fetch.is_fetchable(name):
        folder = fetch.cached_folder(name)
        if folder is None:
            raise ModelLoadError(f"{name} is not fetched yet: load it once (Generate) or run "
                                 f"`python -m specdec fetch {name}`.")
        return str(folder)
    return locate(name, allow_local_paths)[0]


def model_config(name: str, allow_local_paths: bool = True):
    from transformers import AutoConfig

    source = model_source(name, allow_local_paths)
    try:
        return AutoConfig.from_pretrained(source, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 (OSError, ValueError: not on this machine or unreadable)
        raise ModelLoadError(f"{name}'s config is not available on this machine ({type(exc).__name__}): "
                             "no cost model without its shape.") from exc


def target_network(name: str, allow_local_paths: bool = True) -> Network:
    return network_from_config(model_config(name, allow_local_paths), name)


def draft_shape(name: str, target: Network, allow_local_paths: bool = True) -> DraftShape:
    """A drafter by the name the app uses: a registered one (prompt lookup, the zoo) or a draft model."""
    from specdec.drafters.registry import registered
    from specdec.drafters.shipped import drafter_dir, read_meta
    from specdec.planning.choice import AUTO

    if name == AUTO:
        raise ValueError("No cost model for auto: it chooses its drafter and K per run from this machine's measured "
                         "costs (the Generate tab's Auto card shows the choice); choose a drafter to price it here")
    spec = registered(name)
    if spec is None:
        return DraftShape(name, "draft model", target_network(name, allow_local_paths))
    return shipped_shape(spec, read_meta(drafter_dir(spec.weights)) if spec.weights else {}, target)


def choose_dtype(dtype: str, device: Device, target_name: str, allow_local_paths: bool = True) -> str:
    """`auto`: what the app would load on this machine (its measured choice where tuning.py has cached one, else
    loading.resolve_dtype's rules); on a GPU preset bfloat16, or float16 where the device has no bfloat16 (T4)."""
    if dtype != "auto":
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"Unknown dtype {dtype!r}: use auto, {', '.join(DTYPE_BYTES)}.")
        return dtype
    if device.key != THIS_MACHINE:
        return "bfloat16" if "bfloat16" in device.peak_flops else "float16"
    from specdec.models.loading import dtype_name, resolve_device, resolve_dtype
    from specdec.runners import tuning

    source, resolved = model_source(target_name, allow_local_paths), resolve_device("auto")
    measured = tuning.cached_for(source, resolved) if resolved.type == "cpu" and tuning.enabled() else None
    if measured is not None:
        return measured.dtype
    return dtype_name(resolve_dtype("auto", resolved, source if os.path.isdir(source) else None))


# --- prediction ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prediction:
    target: Network
    draft: DraftShape
    device: Device
    dtype: str
    context: int
    k: int
    ks: tuple[int, ...]
    decode: Cost  # the target's 1-token forward: one target-only step
    verify: Cost  # the target's (K+1)-token forward at the chosen K
    prefill: Cost  # the target over `context` prompt tokens
    draft_decode: Optional[Cost]  # the draft network's 1-token call, or a one-call drafter's call for K tokens
    draft_verify: Optional[Cost]  # its (K+1)-token forward, for the roofline (None: no network, or one call)
    draft_prefill: Optional[Cost]
    c: tuple[float, ...]  # c(K) for each K in ks
    v: tuple[float, ...]  # v(K) for each K in ks

    def at(self, k: int) -> tuple[float, float]:
        """(c, v) at K = k."""
        i = self.ks.index(k)
        return self.c[i], self.v[i]

    def speedups(self, alpha: float) -> tuple[list[float], list[float]]:
        """(textbook E / (K·c + 1), measured form E / (K·c + v(K))) over ks, with the predicted c and v(K)."""
        return ([theoretical_speedup(alpha, k, c) for k, c in zip(self.ks, self.c)],
                [theoretical_speedup(alpha, k, c, v) for k, c, v in zip(self.ks, self.c, self.v)])


def predict(target: Network, draft: DraftShape, device: Device, dtype: str, k: int = 4,
            ks: tuple[int, ...] = tuple(range(1, 9)), context: int = CONTEXT) -> Prediction:
    ks = tuple(sorted(set(ks) | {k}))
    costs = {n: forward_cost(target, device, dtype, n, context) for n in {1, *(j + 1 for j in ks)}}
    step = costs[1].time_s
    net = draft.network
    if net is None:
        draft_costs = (None, None, None)
    elif draft.one_call:  # Medusa: its one call per step is all it runs (no cache, no prefill)
        draft_costs = (forward_cost(net, device, dtype, 1, context, logit_rows=k), None, None)
    else:
        draft_costs = (forward_cost(net, device, dtype, 1, context), forward_cost(net, device, dtype, k + 1, context),
                       forward_cost(net, device, dtype, context, 0, logit_rows=1))
    return Prediction(target, draft, device, dtype, context, k, ks, costs[1], costs[k + 1],
                      forward_cost(target, device, dtype, context, 0, logit_rows=1), *draft_costs,
                      c=tuple(draft.step_s(device, dtype, j, context) / j / step for j in ks),
                      v=tuple(costs[j + 1].time_s / step for j in ks))


# --- prediction next to measurement -----------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """One K: predicted and measured (a Sweep row: specdec/measure/sweep.py) c, v(K) and speedup."""

    k: int
    c_predicted: float
    c_measured: Optional[float]
    v_predicted: float
    v_measured: Optional[float]
    speedup_predicted: Optional[float]  # E / (K·c + v(K)) with the predicted c, v(K) and the measured α
    speedup_measured: Optional[float]
    speedup_low: Optional[float]
    speedup_high: Optional[float]
    alpha: Optional[float]  # measured, pooled over the K values (accepted / evaluated)

    @property
    def c_error(self) -> Optional[float]:
        """(predicted − measured) / measured; None for a drafter predicted to cost nothing (no network), where
        it would be −100% whatever was measured: compare c_predicted − c_measured, in target steps, instead."""
        if self.c_predicted == 0:
            return None
        return next(iter(relative_errors([self.c_predicted], [self.c_measured])), None)

    @property
    def v_error(self) -> Optional[float]:
        return next(iter(relative_errors([self.v_predicted], [self.v_measured])), None)


def compare(prediction: Prediction, rows) -> list[Comparison]:
    """Per measured K (rows: SweepRows of one draft and temperature, add_theory applied)."""
    out = []
    for row in sorted(rows, key=lambda r: r.k):
        if row.k not in prediction.ks:
            continue
        c, v = prediction.at(row.k)
        alpha = row.alpha
        out.append(Comparison(row.k, c, row.c, v, row.v,
                              theoretical_speedup(alpha, row.k, c, v) if alpha is not None else None,
                              row.speedup, row.speedup_low, row.speedup_high, alpha))
    return out
