"""The Sweep tab's callback on vLLM (the sidebar's engine): one server per (draft, K) setting, started through the
lab's launcher one after the other, measured against the sidebar's baseline server and stopped
(specdec/vllm/sweep.py); the rows go to the Sweep's own views (views/sweep.sweep_update). Each start takes minutes on
a CPU, which the tab says before starting.

Only where the lab may start processes: not on a public deployment, and only with the vLLM venv set up
(`python -m specdec vllm setup`); the app never installs it.
"""
from __future__ import annotations

from dataclasses import replace

from specdec.measure.sweep import add_theory, parse_ks, parse_temperatures
from specdec.serving.limits import is_public
from specdec.serving.request import RunRequest
from specdec.ui.lab import error_update
from specdec.ui.session import Session
from specdec.ui.tabs.sweep.callbacks import swept_drafts
from specdec.ui.views.render import render_status
from specdec.ui.views.sweep import sweep_update
from specdec.ui.vllm.engine import connect_baseline
from specdec.vllm import engine as vllm_engine
from specdec.vllm import sweep as vllm_sweep
from specdec.vllm.client import VllmError

import gradio as gr

START_MINUTES = (2.5, 6.0)  # measured per server start on this project's shared 2-core CPU (docs/vllm.md)
NOTE = ("**On a vLLM server** (the sidebar's engine), the Sweep starts one vLLM server per draft and K, one after "
        "the other, each measured against the sidebar's baseline server and then stopped: a start takes "
        f"~{START_MINUTES[0]:g}–{START_MINUTES[1]:g} minutes on a 2-core CPU, so keep the sweep small (e.g. "
        "prompt-lookup at K = 2, 4). Stop stops the server being started or measured. Drafts: prompt-lookup (vLLM's "
        "ngram), smollm2-135m-draft (draft_model), smollm2-135m-eagle (eagle), smollm2-135m-eagle3 (eagle3), or a "
        "draft checkpoint's folder.")


def venv_python():
    """The vLLM venv's python, or a clear error (the app does not install it)."""
    from specdec.vllm.venv import has_cuda, is_ready, requirements, venv_dir
    from specdec.vllm.venv import venv_python as python_of

    venv = venv_dir()
    if not is_ready(venv, requirements(has_cuda())):
        raise VllmError(f"no vLLM venv at {venv}: set it up with `python -m specdec vllm setup` (the app does not "
                        f"install it)")
    return python_of(venv)


def starting_note(count: int) -> str:
    low, high = (count * m for m in START_MINUTES)
    return (f"Starting {count} vLLM server{'s' if count != 1 else ''} one after the other: ~{START_MINUTES[0]:g}–"
            f"{START_MINUTES[1]:g} min each on a 2-core CPU, ~{low:.0f}–{high:.0f} min of start-up in all. "
            f"Stop stops the current one.")


def sweep(lab, session: Session, request: RunRequest, drafts=None, ks="1-8", temperatures="0", tokens=64,
          schedules=None, progress=gr.Progress(), *, python=None, resolve=None, launcher=None):
    """Generator for the Sweep tab with Engine: vLLM server (sweep_tab dispatches here); python, resolve and
    launcher replace the venv's python, export.resolve_draft and the launcher module (tests)."""
    with session.timed_run():
        try:
            if is_public():
                raise VllmError("the vLLM sweep starts servers on this machine: it is not offered on a public "
                                "deployment")
            asked = [request.settings.k_schedule] if schedules is None else schedules or ["constant"]
            if any(s != "constant" for s in asked):
                raise VllmError("a vLLM server's K is fixed when it starts: the vLLM sweep takes the constant K "
                                "schedule only")
            k_values, temps = parse_ks(ks), parse_temperatures(temperatures)
            names = swept_drafts(request, drafts)
            if resolve is None:
                from specdec.vllm.export import resolve_draft

                def resolve(name):
                    return resolve_draft(name, say=lambda _: None)
            yield {"status": render_status("Checking the baseline server, preparing the drafts for vLLM…"),
                   "error": ""}
            baseline = connect_baseline(session.vllm)  # first: an unreachable server fails before any export
            settings = vllm_sweep.settings_for_drafts(names, k_values, resolve)
            ids = vllm_engine.encode(baseline, request.prompt, request.chat)
            python = python or venv_python()
            decode = replace(request.settings, k=k_values[0], temperature=temps[0], k_schedule="constant",
                             max_new_tokens=int(tokens))
            yield {"status": render_status(starting_note(len(settings))), "error": ""}
            rows = yield from follow(vllm_sweep.sweep(
                baseline, settings, ids, decode, python, temperatures=temps, policy=lab.sweep_policy,
                should_stop=lambda: session.stop_requested,
                **({"launcher": launcher} if launcher is not None else {})), progress)
            session.sweep_rows = add_theory(rows)
            done = "stopped" if session.stop_requested else "finished"
            status = (f"vLLM sweep {done}: {len(rows)} of {len(settings) * len(temps)} points measured. "
                      f"{vllm_sweep.NOT_AVAILABLE}.")
            yield {**(sweep_update(rows) if rows else {}), "error": "", "status": render_status(status)}
        except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
            yield error_update(exc)


def follow(steps, progress):
    """Generator: each Progress as the status line and the progress bar; returns the rows."""
    rows = []
    try:
        for step in steps:
            if step.row is not None:
                rows.append(step.row)
            yield {"status": render_status(vllm_sweep.describe(step))}
            progress((step.index, step.total), desc=vllm_sweep.describe(step), unit="servers")
    finally:
        steps.close()  # a Stop or a closed page: the running server is stopped (specdec/vllm/sweep.py's finally)
    return rows
