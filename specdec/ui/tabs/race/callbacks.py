"""The Race tab's callback: target-only and speculative decoding on the same prompt, side by side, with live
tokens/s (views/race.py draws the lanes).

Both share one device, so they take turns: the lane whose own engine clock is behind runs its next
step. Each lane's clock counts only its own compute, so each side's tokens/s is what it would get
alone, and at any moment both lanes have had the same compute time: the faster one shows more text.
The race is for watching; its verdict is the measured speedup (specdec.measure.speedup), the same figure
Generate shows for the same configuration.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from specdec.engine.events import RunMetrics
from specdec.engine.theory import live_metrics
from specdec.ui.lab import LabCore, error_update, final_status, make_settings, measuring_status
from specdec.ui.session import Session
from specdec.ui.throttle import Throttle
from specdec.ui.views.race import lanes_update, race_summary, stopped_summary
from specdec.ui.views.render import render_status


@dataclass
class Lane:
    name: str
    gen: object  # a Generation: iterates StepEvents, keeps its own engine_time_s
    events: list = field(default_factory=list)
    done: bool = False
    clock_word = "of compute"  # what the lane's clock counts (a vLLM lane's: vllm_race.ServerLane)

    @property
    def clock_s(self) -> float:
        return self.gen.engine_time_s

    def advance(self) -> None:
        event = next(self.gen, None)
        if event is None:
            self.done = True
            return
        self.events.append(event)
        self.done = event.finished

    def stats(self) -> RunMetrics:
        return replace(live_metrics(self.events), wall_time_s=self.clock_s)


def next_lane(lanes: list[Lane]) -> Lane | None:
    """The unfinished lane with the least compute so far (ties: the first)."""
    active = [lane for lane in lanes if not lane.done]
    return min(active, key=lambda lane: lane.clock_s) if active else None


def run_lanes(lab: LabCore, session: Session, prep, settings):
    """Generator: both lanes advance by their own compute clocks until both finish (or Stop)."""
    gens = [lab.engine.start(prep.target, None, prep.ids, settings),
            lab.engine.start(prep.target, prep.draft, prep.ids, settings)]
    lanes = [Lane("Target only", gens[0]), Lane("Speculative", gens[1])]
    throttle = Throttle(lab.token_interval_s)
    try:
        while (lane := next_lane(lanes)) is not None and not session.stop_requested:
            lane.advance()
            if throttle.ready() or lane.done:
                yield {**lanes_update(lanes, prep.text), "error": "", "race_summary": ""}
    finally:
        for gen in gens:
            gen.close()
    return lanes


def race(lab: LabCore, session: Session, prompt, clean_whitespace, target, draft, target_custom, draft_custom,
         k, temperature, top_p, top_k, max_new_tokens, seed, k_schedule="constant", chat=True):
    """Generator for the Race tab: both lanes stream step by step until both finish (or Stop); then the
    speedup is measured (or reused from Generate) in the same queue slot."""
    with session.timed_run():
        try:
            settings = make_settings(k, temperature, top_p, top_k, max_new_tokens, seed, k_schedule)
            prep = yield from lab.prepare_pair(prompt, clean_whitespace, target, draft, target_custom, draft_custom,
                                               chat)
            base, spec = lanes = yield from run_lanes(lab, session, prep, settings)
            if not (base.done and spec.done):  # stopped; a Stop after both finished stops the measurement
                yield {**lanes_update(lanes, prep.text), "race_summary": stopped_summary(base, spec), "error": "",
                       "status": render_status("Stopped.")}
                return
            yield {**lanes_update(lanes, prep.text), "race_summary": race_summary(base, spec), "error": "",
                   "status": render_status("Race finished; measuring the speedup…")}
            for est in lab.measure(session, prep, settings):
                update = {"race_summary": race_summary(base, spec, est),
                          "status": render_status(final_status(est) if est.final else measuring_status(est))}
                yield {**lanes_update(lanes, prep.text), "error": "", **update} if est.final else update
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)
