"""The Sweep tab's callback (API: `sweep`): every (draft, K schedule, K, temperature) point a measured speedup, then
the figures and table (views/sweep.py); a plain generator of {output name: value} dicts, pure apart from
gr.Progress."""
from __future__ import annotations

from dataclasses import replace

from specdec.measure.sweep import SweepRunner, add_theory, parse_ks, parse_schedules, parse_temperatures, plan_sweep
from specdec.serving.request import RunRequest
from specdec.ui.lab import LabCore, error_update, measure_points
from specdec.ui.session import Session
from specdec.ui.views.render import render_status
from specdec.ui.views.sweep import sweep_update

import gradio as gr


def swept_drafts(request: RunRequest, drafts) -> list[str]:
    """The drafters a sweep measures: the Sweep's own choice when it has one, else the request's (the sidebar's)."""
    chosen = [d.strip() for d in ([drafts] if isinstance(drafts, str) else drafts or []) if d and d.strip()]
    return chosen or [request.draft]


def sweep(lab: LabCore, session: Session, request: RunRequest, drafts=None, ks="1-8", temperatures="0", tokens=64,
          schedules=None, progress=gr.Progress()):
    """Generator for the Sweep tab: every (draft, K schedule, K, temperature) point, a measured speedup, with the
    request's prompt, target and warping. `drafts`: the Sweep's own drafters (empty: the request's draft);
    `tokens`: new tokens per run; `schedules`: the K schedules to compare (None: the request's alone)."""
    with session.timed_run():
        try:
            k_values, temps = parse_ks(ks), parse_temperatures(temperatures)
            names = parse_schedules([request.settings.k_schedule] if schedules is None else schedules)
            drafts = swept_drafts(request, drafts)
            base = replace(request.settings, k=k_values[0], temperature=temps[0], k_schedule=names[0],
                           max_new_tokens=int(tokens))
            prep = yield from lab.prepare_request(request, drafts)
            runner = SweepRunner(lab.engine, prep.target, dict(zip(drafts, prep.drafts)), prep.ids, base,
                                 session.measurements, lab.sweep_policy, lambda: session.stop_requested)
            points = plan_sweep(drafts, k_values, temps, names)
            rows = yield from measure_points(runner, points, session, progress)
            session.sweep_rows = add_theory(rows)
            lab.classroom.record_sweep(prep.text, rows, request.exercise)  # pooled on the class board
            status = render_status(f"{sweep_status(rows, points, session)} Swept {', '.join(drafts)}"
                                   f"{' (the sidebar draft)' if drafts == [request.draft] else ''}.")
            yield {**(sweep_update(rows) if rows else {}), "error": "", "status": status}
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)


def sweep_status(rows, points, session: Session) -> str:
    if session.stop_requested:
        return f"Sweep stopped: {len(rows)} of {len(points)} points measured."
    return f"Sweep finished: {len(rows)} of {len(points)} points measured."
