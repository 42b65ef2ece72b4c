"""The "Is it exact?" tab's callback (API: `lossless`): greedy token-by-token identity and a sampling test of the
first tokens against the target's exact probabilities (specdec/exactness/lossless.py), with a switch that breaks
the verifier on purpose (specdec/exactness/verifier_faults.py). A plain generator of {output name: value}
(views/lossless.py draws the results)."""
from __future__ import annotations

from dataclasses import asdict

from specdec.exactness import lossless
from specdec.exactness.verifier_faults import REAL, choose_verifier
from specdec.serving.request import RunRequest
from specdec.ui.lab import LabCore, error_update
from specdec.ui.session import Session
from specdec.ui.throttle import Throttle
from specdec.ui.views.lossless import histogram_figure, render_greedy, render_verdict
from specdec.ui.views.render import render_status

import gradio as gr

MAX_DRAWS = 20_000


def check(lab: LabCore, session: Session, request: RunRequest, draws=MAX_DRAWS, tokens=1, verifier=REAL,
          progress=gr.Progress(), *, checks=lossless):
    """Generator for the tab: load, greedy comparison, then the sampling test (Stop ends either)."""
    with session.timed_run():
        try:
            settings = request.settings
            choose_verifier(verifier)  # an unknown name is refused before anything loads
            prep = yield from lab.prepare_request(request)
            stop, throttle = (lambda: session.stop_requested), Throttle(lab.heavy_interval_s)
            greedy = yield from follow(checks.compare_greedy(prep.target, prep.draft, prep.ids, settings, stop,
                                                             verifier=verifier), throttle, progress)
            yield {"greedy": render_greedy(greedy), "verdict": "", "plot": None, "error": ""}
            sampling = None
            if not session.stop_requested:
                sampling = yield from follow(checks.check_sampling(
                    prep.target, prep.draft, prep.ids, settings, draws=int(draws), tokens=int(tokens),
                    verifier=verifier, should_stop=stop), throttle, progress)
            yield final_update(greedy, sampling)
        except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
            yield error_update(exc)


def follow(steps, throttle: Throttle, progress):
    """`yield from` a check: its Progress becomes a status update, then the progress bar (in that order: an
    update clears the bar until the next call), at most once per throttle interval; returns the check's result."""
    while True:
        try:
            step = next(steps)
        except StopIteration as stop:
            return stop.value
        if throttle.ready():
            yield {"status": render_status(f"Checking: {step.describe()}… (Stop ends it)")}
            progress((step.done, step.total), desc=step.describe())


def final_update(greedy, sampling) -> dict:
    stopped = greedy.stopped or sampling is None or sampling.stopped
    update = {"greedy": render_greedy(greedy), "result": result_json(greedy, sampling), "error": "",
              "status": render_status("Stopped: the results cover what was done until Stop." if stopped else
                                      "Done.")}
    if sampling is not None:
        update.update(verdict=render_verdict(sampling), plot=histogram_figure(sampling))
    return update


def result_json(greedy, sampling) -> dict:
    """Every number of both checks, plain JSON (the API's `result`)."""
    return {
        "greedy": {**asdict(greedy), "identical": greedy.identical},
        "sampling": None if sampling is None else {**asdict(sampling), "passed": sampling.passed,
                                                   "verdict": sampling.verdict},
        "passed": greedy.identical and sampling is not None and sampling.passed,
    }
