"""The Race tab's callback on vLLM servers (the sidebar's engine): the speculative server's completion against the
baseline server's, side by side, then the speedup measured with specdec/measure/speedup.py's rules
(specdec/vllm/engine.measure_speedup, the figure Generate shows for the same servers and settings).

Two servers cannot take turns step by step as the lab's lanes do (a server computes whether or not its stream is
read), and on a small CPU two at once would slow each other; so the lanes run one after the other, the speculative
one first, each lane's clock being its own request's time as the client sees it (prefill and HTTP included).
The lanes show the same views as the lab's Race (tokens coloured by fate, tokens/s, target forwards); compute time
inside the server is not exposed by vLLM.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from specdec.ui.lab import error_update, final_status, make_settings, measuring_status
from specdec.ui.session import Session
from specdec.ui.tabs.race.callbacks import Lane
from specdec.ui.throttle import Throttle
from specdec.ui.views.race import lanes_update, race_summary, stopped_summary
from specdec.ui.views.render import render_status
from specdec.ui.vllm.engine import connect_pair, server_settings
from specdec.vllm import engine as vllm_engine

TURNS = ("On vLLM the lanes run one after the other (the speculative server first): each lane's clock is its own "
         "request's time as the client sees it (vLLM does not expose its compute time).")


@dataclass
class ServerLane(Lane):
    """A lane streamed from a vLLM server: its clock is the request's time so far (then its wall time)."""

    wall_s: float = 0.0
    clock_word = "as the client sees it"

    @property
    def clock_s(self) -> float:
        return self.wall_s


def stream_lane(lab, session: Session, lanes: list[ServerLane], lane: ServerLane, server, ids, settings, prompt):
    """Generator: the lane's completion streamed into it (coloured once vLLM's record arrives); Stop ends it."""
    gen, throttle, started = vllm_engine.stream_run(server, ids, settings), Throttle(lab.token_interval_s), \
        time.perf_counter()
    try:
        while True:
            try:
                lane.events = next(gen)
            except StopIteration as stop:
                lane.events, lane.wall_s, lane.done = stop.value.result.events, stop.value.completion.wall_s, True
                yield {**lanes_update(lanes, prompt), "error": ""}
                return
            lane.wall_s = time.perf_counter() - started
            if session.stop_requested:
                return
            if throttle.ready():
                yield {**lanes_update(lanes, prompt), "error": "", "race_summary": ""}
    finally:
        gen.close()


def race(lab, session: Session, prompt, clean_whitespace, target, draft, target_custom, draft_custom, k,
         temperature, top_p, top_k, max_new_tokens, seed, k_schedule="constant", chat=True):
    """Generator for the Race tab with Engine: vLLM server (race_tab dispatches here): the speculative server's lane,
    then the baseline's, then the measured speedup. The sidebar's models are the servers'; its K is the server's."""
    with session.timed_run():
        try:
            lead, baseline = connect_pair(session.vllm, need_baseline=True)
            settings = server_settings(lead, make_settings(k, temperature, top_p, top_k, max_new_tokens, seed,
                                                           k_schedule))
            ids = vllm_engine.encode(lead, prompt, chat is not False)
            base = ServerLane("Baseline server (no speculation)", None)
            spec = ServerLane(f"Speculative server ({lead.info.method}, K={lead.info.k})", None)
            lanes = [base, spec]
            yield {"status": render_status(f"Racing on vLLM. {TURNS}"), "error": "", "race_summary": ""}
            for lane, server in ((spec, lead), (base, baseline)):
                yield from stream_lane(lab, session, lanes, lane, server, ids, settings, prompt)
                if not lane.done:
                    yield {**lanes_update(lanes, prompt), "race_summary": stopped_summary(base, spec), "error": "",
                           "status": render_status("Stopped.")}
                    return
            yield {**lanes_update(lanes, prompt), "race_summary": race_summary(base, spec), "error": "",
                   "status": render_status("Race finished; measuring the speedup against the baseline server…")}
            for est in vllm_engine.measure_speedup(lead, baseline, ids, settings, cache=session.measurements,
                                                   policy=lab.policy, should_stop=lambda: session.stop_requested):
                yield {"race_summary": race_summary(base, spec, est),
                       "status": render_status(final_status(est) if est.final else measuring_status(est))}
        except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
            yield error_update(exc)
