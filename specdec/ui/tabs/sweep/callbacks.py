"""The Sweep tab's callback (API: `sweep`): every (draft, K schedule, K, temperature) point a measured speedup, then
the figures and table (views/sweep.py); a plain generator of {output name: value} dicts, pure apart from
gr.Progress."""
from __future__ import annotations

from specdec.measure.sweep import SweepRunner, add_theory, parse_ks, parse_schedules, parse_temperatures, plan_sweep
from specdec.ui.lab import LabCore, error_update, make_settings, measure_points
from specdec.ui.models import pick_name
from specdec.ui.session import Session
from specdec.ui.views.render import render_status
from specdec.ui.views.sweep import sweep_update

import gradio as gr


def sweep(lab: LabCore, session: Session, prompt, clean_whitespace, target, target_custom, drafts, ks, temperatures,
          max_new_tokens, seed, top_p, top_k, chat=True, k_schedule="constant", schedules=None,
          progress=gr.Progress()):
    """Generator for the Sweep tab: every (draft, K schedule, K, temperature) point, a measured speedup.
    `schedules`: the K schedules to compare (None: the sidebar's `k_schedule` alone)."""
    with session.timed_run():
        try:
            k_values, temps = parse_ks(ks), parse_temperatures(temperatures)
            names = parse_schedules([k_schedule] if schedules is None else schedules)
            drafts = [d.strip() for d in ([drafts] if isinstance(drafts, str) else drafts or []) if d and d.strip()]
            if not drafts:
                raise ValueError("Pick at least one draft model for the sweep.")
            base = make_settings(k_values[0], temps[0], top_p, top_k, max_new_tokens, seed, names[0])
            prep = yield from lab.prepare(prompt, clean_whitespace, pick_name(target, target_custom), drafts,
                                          chat=chat is not False)
            runner = SweepRunner(lab.engine, prep.target, dict(zip(drafts, prep.drafts)), prep.ids, base,
                                 session.measurements, lab.sweep_policy, lambda: session.stop_requested)
            points = plan_sweep(drafts, k_values, temps, names)
            rows = yield from measure_points(runner, points, session, progress)
            session.sweep_rows = add_theory(rows)
            lab.classroom.record_sweep(prep.text, rows)  # pooled on the class board
            status = render_status(sweep_status(rows, points, session))
            yield {**(sweep_update(rows) if rows else {}), "error": "", "status": status}
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)


def sweep_status(rows, points, session: Session) -> str:
    if session.stop_requested:
        return f"Sweep stopped: {len(rows)} of {len(points)} points measured."
    return f"Sweep finished: {len(rows)} of {len(points)} points measured."
