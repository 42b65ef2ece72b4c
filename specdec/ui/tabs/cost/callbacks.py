"""The "Why this speedup?" tab's callbacks: the cost model's prediction (specdec/measure/cost_model.py) for the
sidebar's pair and K on a device, next to c, v(K) and the speedup measured on this machine with the real runners (a
Sweep over K: specdec/measure/sweep.py). Plain functions returning {output name: value} dicts (views/cost.py draws
them)."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from specdec.engine.theory import median
from specdec.measure import cost_model as cm
from specdec.measure import weight_formats
from specdec.measure.device_presets import THIS_MACHINE, cached_machine, measure_this_machine, preset
from specdec.measure.sweep import SweepPoint, SweepRunner, add_theory, parse_ks, plan_sweep
from specdec.serving.limits import check_sweep_size, current
from specdec.ui.cost_prediction import Measured, prediction
from specdec.serving.request import RunRequest
from specdec.ui.lab import LabCore, error_update, measure_points
from specdec.ui.models import describe_error, pick_name
from specdec.ui.session import Session
from specdec.ui.views.cheaper_target import render_formats
from specdec.ui.views.cost import render
from specdec.ui.views.render import render_status

import gradio as gr

DEFAULT_ALPHA = 0.7
NOT_MEASURED = ("This machine is not measured yet: press “Measure on this machine” (its bandwidth, matmul "
                "peak and dispatch overhead first, in about a second, then c, v(K) and the speedup over K with the "
                "real runners), or pick a preset device.")


def predict_view(target, draft, target_custom, draft_custom, k, device_key, dtype, alpha,
                 measured: Optional[Measured] = None, *, allow_local_paths: bool = True, machine=cached_machine) -> dict:
    """The prediction for the sidebar's pair on the chosen device, with this machine's measurement beside it
    when one exists for this pair."""
    try:
        target, draft = pick_name(target, target_custom), pick_name(draft, draft_custom)
        device = machine() if device_key == THIS_MACHINE else preset(device_key)
        if device is None:
            return {"summary": render_status(NOT_MEASURED), "status": "", "error": ""}
        mine = measured if measured is not None and (measured.target, measured.draft) == (target, draft) else None
        pred = prediction(target, draft, int(k), device, dtype or "auto", mine, allow_local_paths)
        return {**render(pred, float(alpha), mine),
                **render_formats(pred, float(alpha), mine, tuned_here(target, device_key, allow_local_paths))}
    except Exception as exc:  # noqa: BLE001 (a live prediction: a quiet note in its own place, no alarm)
        return {"summary": render_status(f"No prediction for {target} + {draft}: {describe_error(exc)}"), "status": "",
                "error": ""}


def measure(lab: LabCore, session: Session, request: RunRequest, device_key, dtype, k_values,
            progress=gr.Progress(), *, allow_local_paths: bool = True, machine=measure_this_machine):
    """Generator for the Measure button: this machine's device figures, then a Sweep over the K values (the
    request's pair, temperature and settings; constant K); ends with prediction and measurement side by side
    and the α slider set to the measured α."""
    with session.timed_run():
        try:
            ks = parse_ks(k_values)
            check_sweep_size(1, len(ks), 1, current())
            names, k = (request.target, request.draft), request.settings.k
            settings = replace(request.settings, k=ks[0], k_schedule="constant")
            prep = yield from lab.prepare_request(request)
            yield {"status": render_status("Measuring this machine: memory bandwidth, matmul peak, overhead…")}
            device = machine()
            runner = SweepRunner(lab.engine, prep.target, {names[1]: prep.draft}, prep.ids, settings,
                                 session.measurements, lab.sweep_policy, lambda: session.stop_requested)
            rows = yield from measure_points(runner, plan_sweep([names[1]], ks, [settings.temperature]), session,
                                             progress)
            measured = record(names, prep, runner, rows)
            alpha = rows[0].alpha if rows else None  # pooled over K by add_theory
            done = f"Measured {len(rows)} of {len(ks)} K values" + (" (stopped)." if session.stop_requested else ".")
            pred = prediction(*names, int(k), device if device_key == THIS_MACHINE else preset(device_key),
                              dtype or "auto", measured, allow_local_paths, measure_peak=True)
            shown = DEFAULT_ALPHA if alpha is None else alpha
            yield {**render(pred, shown, measured),
                   **render_formats(pred, shown, measured, tuned_here(names[0], device_key, allow_local_paths)),
                   "state": measured,
                   "alpha": gr.skip() if alpha is None else alpha, "status": render_status(done)}
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)


def record(names: tuple[str, str], prep, runner: SweepRunner, rows) -> Measured:
    loaded = str(getattr(prep.target, "dtype", "")).replace("torch.", "")
    return Measured(*names, tuple(add_theory(rows)), len(prep.ids), loaded if loaded in cm.DTYPE_BYTES else "auto",
                    target_step_s(runner, rows), getattr(prep.target, "weights_label", ""))


def tuned_here(target: str, device_key: str, allow_local_paths: bool = True):
    """This machine's tuning record of the target (each path's measured step and verification), for the
    cheaper-target lesson; None on a preset device, or where `tune` has not measured it (the lesson then models
    every format's step)."""
    if device_key != THIS_MACHINE:
        return None
    try:
        return weight_formats.tuned_record(target, cm.model_source(target, allow_local_paths))
    except Exception:  # noqa: BLE001 (an unreadable record: the lesson models the steps instead)
        return None


def target_step_s(runner: SweepRunner, rows) -> Optional[float]:
    """The median target-only step over every timed pair of the measured points (BaselineCosts)."""
    steps = [pair.follow.detail.step_s for row in rows
             for pair in runner.measurement(SweepPoint(row.draft, row.k, row.temperature)).pairs
             if getattr(pair.follow.detail, "step_s", None)]
    return median(steps)
