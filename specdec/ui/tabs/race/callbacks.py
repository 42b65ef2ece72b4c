"""Race: target-only and speculative decoding on the same prompt, side by side, with live tokens/s.

Both share one device, so they take turns: the lane whose own engine clock is behind runs its next
step. Each lane's clock counts only its own compute, so each side's tokens/s is what it would get
alone, and at any moment both lanes have had the same compute time: the faster one shows more text.
The race is for watching; its verdict is the measured speedup (specdec.measure.speedup), the same figure
Generate shows for the same configuration.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from html import escape

from specdec.engine.events import RunMetrics
from specdec.engine.theory import live_metrics
from specdec.ui.callbacks import Lab, error_update, final_status, make_settings, measuring_status
from specdec.ui.session import Session
from specdec.ui.throttle import Throttle
from specdec.ui.views.render import render_key_result, render_status, render_tokens


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


def render_lane(lane: Lane, prompt: str, leader: bool, step_marks: bool = True) -> str:
    stats = lane.stats()
    rate = f"{stats.tokens_per_s:.1f} tok/s" if stats.tokens_per_s else "– tok/s"
    badge = " (finished)" if lane.done else (" ◀ ahead" if leader else "")
    head = (f'<div class="race-head"><b>{escape(lane.name)}{badge}</b>'
            f'<span class="race-rate" data-lane-rate="{escape(lane.name)}">{rate}</span></div>'
            f'<div class="status-line">{stats.new_tokens} tokens · {stats.target_forwards} target forwards · '
            f'{lane.clock_s:.2f} s {lane.clock_word}</div>')
    return head + render_tokens(lane.events, prompt, streaming=not lane.done, step_marks=step_marks)


def race_rates(base: Lane, spec: Lane) -> str:
    b, s = base.stats().tokens_per_s, spec.stats().tokens_per_s
    if not (b and s):
        return ""
    return f"In this race: {s:.1f} vs {b:.1f} tokens per second of compute (one run each, for watching)."


def race_summary(base: Lane, spec: Lane, est=None) -> str:
    """The measured speedup (the same figure as Generate for this configuration) and its verdict,
    then what this one race showed."""
    rates = race_rates(base, spec)
    if est is None or est.ratio is None:
        return render_key_result(f"Measuring the speedup (timed repeats of both decoders)… {rates}")
    verdict = est.verdict
    head = f"Measured speedup: {est.describe()}"
    if verdict == "no measurable difference":
        head += ": no measurable difference."
    elif verdict:
        head += f": speculative decoding is {verdict}."
    elif est.final:
        head += ": too few repeats for a verdict."
    else:
        head += " so far…"
    return render_key_result(f"{head} {rates}", verdict)


def stopped_summary(base: Lane, spec: Lane) -> str:
    return render_key_result(f"Stopped: no verdict for a partial race ({spec.stats().new_tokens} speculative and "
                             f"{base.stats().new_tokens} target-only tokens so far).")


def _lanes_update(lanes: list[Lane], prompt: str) -> dict:
    base, spec = lanes
    ahead = max(lanes, key=lambda lane: live_metrics(lane.events).new_tokens)
    return {"race_base": render_lane(base, prompt, ahead is base and not base.done, step_marks=False),
            "race_spec": render_lane(spec, prompt, ahead is spec and not spec.done)}


def run_lanes(lab: Lab, session: Session, prep, settings):
    """Generator: both lanes advance by their own compute clocks until both finish (or Stop)."""
    gens = [lab.engine.start(prep.target, None, prep.ids, settings),
            lab.engine.start(prep.target, prep.draft, prep.ids, settings)]
    lanes = [Lane("Target only", gens[0]), Lane("Speculative", gens[1])]
    throttle = Throttle(lab.token_interval_s)
    try:
        while (lane := next_lane(lanes)) is not None and not session.stop_requested:
            lane.advance()
            if throttle.ready() or lane.done:
                yield {**_lanes_update(lanes, prep.text), "error": "", "race_summary": ""}
    finally:
        for gen in gens:
            gen.close()
    return lanes


def race(lab: Lab, session: Session, prompt, clean_whitespace, target, draft, target_custom, draft_custom,
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
                yield {**_lanes_update(lanes, prep.text), "race_summary": stopped_summary(base, spec), "error": "",
                       "status": render_status("Stopped.")}
                return
            yield {**_lanes_update(lanes, prep.text), "race_summary": race_summary(base, spec), "error": "",
                   "status": render_status("Race finished; measuring the speedup…")}
            for est in lab.measure(session, prep, settings):
                update = {"race_summary": race_summary(base, spec, est),
                          "status": render_status(final_status(est) if est.final else measuring_status(est))}
                yield {**_lanes_update(lanes, prep.text), "error": "", **update} if est.final else update
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)
