"""The cost model's prediction for a pair on a device, as the "Why this speedup?" and "What if?" tabs ask for it, and
Measured: this machine's measurement of one pair, which the prediction reads its context and dtype from. No Gradio:
the tabs' callbacks call it, views/cost.py draws it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from specdec.measure import cost_model as cm
from specdec.measure.device_presets import THIS_MACHINE, with_dtype


@dataclass(frozen=True)
class Measured:
    """A measurement of this machine for one pair (kept in the tab's gr.State)."""

    target: str
    draft: str
    rows: tuple  # SweepRows of one draft and temperature over K, add_theory applied
    context: int  # prompt tokens
    dtype: str  # as the models were loaded
    step_s: Optional[float] = None  # median target-only step (1-token forward and bookkeeping) over every pair
    weights: str = ""  # which weights the target ran (LoadedModel.weights_label: "Q4_1 as published", ...)


def prediction(target: str, draft: str, k: int, device, dtype: str, measured: Optional[Measured],
               allow_local_paths: bool = True, measure_peak: bool = False) -> cm.Prediction:
    """The cost model's prediction; on this machine a dtype's peak is measured only when measure_peak (the
    Measure button, on the device's queue slot)."""
    net = cm.target_network(target, allow_local_paths)
    shape = cm.draft_shape(draft, net, allow_local_paths)
    if dtype == "auto" and measured is not None and device.key == THIS_MACHINE:
        dtype = measured.dtype
    dtype = cm.choose_dtype(dtype, device, target, allow_local_paths)
    if device.key == THIS_MACHINE:
        device = with_dtype(device, dtype, measure=measure_peak)
    ks = set(range(1, max(8, k) + 1)) | {r.k for r in (measured.rows if measured else ())}
    return cm.predict(net, shape, device, dtype, k, tuple(sorted(ks)), measured.context if measured else cm.CONTEXT)
