"""Gradio wiring shared by every tab: callbacks that return {name: value} dicts become event handlers
(bind, on), the heavy timed runs share one queue slot (DEVICE), Generate has many lanes (CLASS_LANES), and timed
runs get their Stop buttons (on_stop)."""
from __future__ import annotations

import inspect
from functools import wraps
from typing import TYPE_CHECKING

from specdec.ui.guard import guard_run
from specdec.ui.run_ids import RUN_JS, STOP_JS, tied_to_run

import gradio as gr

if TYPE_CHECKING:
    from specdec.ui.lab import LabCore

DEVICE = "device"  # Race, Sweep, Is it exact? and Why this speedup? share this queue slot: one at a time
# Generate runs up to this many requests at once (a class of 30 and some): their steps and timed pairs take turns
# through the engine's compute gate (specdec/engine/gate.py), so no timed pair overlaps other compute
CLASS_LANES = 32


def bind(fn, outputs: dict[str, gr.components.Component]):
    """Wraps a callback that returns/yields {name: value} dicts into one returning tuples in the
    order of `outputs`; names it leaves out become gr.skip() (the component keeps what it shows)."""
    names = list(outputs)

    def as_tuple(update: dict):
        values = tuple(update.get(name, gr.skip()) for name in names)
        return values[0] if len(values) == 1 else values  # Gradio takes a lone output's value as is

    if inspect.isgeneratorfunction(fn):
        @wraps(fn)
        def stream(*args, **kwargs):
            for update in fn(*args, **kwargs):
                yield as_tuple(update)
        return stream, list(outputs.values())

    @wraps(fn)
    def once(*args, **kwargs):
        return as_tuple(fn(*args, **kwargs))
    return once, list(outputs.values())


def on_gpu(fn, duration_s: int):
    """On a ZeroGPU Space (the `spaces` package is installed) the function gets a GPU while it runs;
    anywhere else it is returned unchanged."""
    try:
        import spaces
    except ImportError:
        return fn
    return spaces.GPU(duration=duration_s)(fn)


def on(trigger, fn, inputs, outputs: dict, gpu_s: int | None = None, run_id=None, **kwargs):
    """Registers `fn` (a dict-returning callback) on `trigger`; gpu_s marks a timed run on the device, and
    run_id (the hidden run-id component) ties it to its Stop buttons (on_stop)."""
    if gpu_s:
        fn = guard_run(fn)  # deployment limits and the per-run time budget (guard.py)
    if run_id is not None:
        fn, inputs = tied_to_run(fn), [*inputs, run_id]
        kwargs["js"] = RUN_JS % (kwargs["api_name"], len(inputs))
    wrapped, components = bind(fn, outputs)
    if gpu_s:
        wrapped = on_gpu(wrapped, gpu_s)
    return trigger(wrapped, inputs=inputs, outputs=components, **kwargs)


def on_stop(trigger, lab: LabCore, session, run_id, run_name: str, outputs: dict, **kwargs):
    """A Stop button for the timed run registered as api_name=run_name: it sends the id of that run as started
    last in this page (RUN_JS) and stops only that run."""
    return on(trigger, lab.stop, [session, run_id], outputs, js=STOP_JS % run_name, concurrency_limit=None,
              **kwargs)


def pick(c: dict, *names: str, **renamed: str) -> dict:
    """Outputs by the names a callback uses: pick(c, "tokens", status="race_status")."""
    return {**{n: c[n] for n in names}, **{n: c[key] for n, key in renamed.items()}}
