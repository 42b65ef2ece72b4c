"""Run ids that tie each Stop to its run.

Each timed run gets an id made in the page as it is sent, kept per endpoint (window.specdecRunIds[api_name]);
its tab's Stop sends that id, and the session stops only the run with it (Session.request_stop), so a Stop
pressed during one run that reaches the server after the next run started stops nothing. The id is set only
when the run is really sent: Gradio drops a click while that run is pending before its js runs.
"""
from __future__ import annotations

import inspect
from functools import wraps

RUN_JS = """(...args) => { const id = Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
  (window.specdecRunIds ||= {})["%s"] = id; const inputs = args.slice(0, %d); inputs[inputs.length - 1] = id;
  return inputs; }"""
STOP_JS = """(session, runId) => [session, (window.specdecRunIds || {})["%s"] || "none"]"""


def tied_to_run(fn):
    """fn with one more, last input: the run id RUN_JS made (empty from an API client). The session's next
    timed run takes it (Session.timed_run), so only a Stop carrying it stops this run."""
    params = list(inspect.signature(fn).parameters.values())
    cut = next((i for i, p in enumerate(params) if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD)), len(params))
    run_id = inspect.Parameter("run_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="")

    def take_id(args):
        *args, given = args
        args[0].next_run_id = str(given or "") or None  # args[0]: the Session
        return args

    @wraps(fn)
    def tied(*args, **kwargs):
        return (yield from fn(*take_id(args), **kwargs))

    tied.__signature__ = inspect.Signature([*params[:cut], run_id, *params[cut:]])
    return tied
