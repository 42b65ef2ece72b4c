"""The "What if?" tab's callbacks, one server call each: "Use my run" sends the last run (views/replay.run_data), and a
device preset sends the cost model's c and v(K) for the sidebar's pair; everything else runs in the browser
(views/whatif.js)."""
from __future__ import annotations

from specdec.measure.device_presets import preset
from specdec.ui.cost_prediction import prediction
from specdec.ui.models import describe_error, pick_name
from specdec.ui.session import Session
from specdec.ui.views.replay import run_data

import gradio as gr

K_MAX = 16  # the slider's and the plot's largest K


def use_my_run(session: Session) -> dict:
    """The last run as the panel takes it (views/replay.run_data); a toast when there is none."""
    data = run_data(session.last_run)
    if data is None:
        gr.Warning("No run yet: press Run in the Generate tab first.", duration=5)
    return {"whatif_run": data or {}}


def preset_curve(target, draft, target_custom, draft_custom, device_key, *, allow_local_paths: bool = True) -> dict:
    """The cost model's c and v(K), K = 1..16, for the sidebar's pair on a device preset (cost_prediction.prediction);
    {} for the line (no preset) or when the pair cannot be predicted (a toast says why)."""
    if not device_key:
        return {"whatif_preset": {}}
    try:
        target, draft = pick_name(target, target_custom), pick_name(draft, draft_custom)
        pred = prediction(target, draft, K_MAX, preset(device_key), "auto", None, allow_local_paths)
    except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
        gr.Warning(describe_error(exc), duration=5)
        return {"whatif_preset": {}}
    by_k = dict(zip(pred.ks, zip(pred.c, pred.v)))
    return {"whatif_preset": {"label": pred.device.label, "pair": f"{target} with {draft}",
                              "c": [by_k[k][0] for k in range(1, K_MAX + 1)],
                              "v": [by_k[k][1] for k in range(1, K_MAX + 1)]}}
