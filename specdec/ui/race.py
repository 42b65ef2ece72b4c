"""Race: target-only and speculative decoding on the same prompt, side by side, with live tokens/s.

Both share one device, so they take turns: the lane whose own engine clock is behind runs its next
step. Each lane's clock counts only its own compute, so each side's tokens/s is what it would get
alone, and at any moment both lanes have had the same compute time: the faster one shows more text.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from html import escape

from specdec.theory import RunStats, compute_stats

from .callbacks import Lab, Throttle, error_update, make_settings
from .render import render_status, render_tokens
from .session import Session


@dataclass
class Lane:
    name: str
    gen: object  # a Generation: iterates StepEvents, keeps its own engine_time_s
    events: list = field(default_factory=list)
    done: bool = False

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

    def stats(self) -> RunStats:
        return replace(compute_stats(self.events), engine_s=self.clock_s)


def next_lane(lanes: list[Lane]) -> Lane | None:
    """The unfinished lane with the least compute so far (ties: the first)."""
    active = [lane for lane in lanes if not lane.done]
    return min(active, key=lambda lane: lane.clock_s) if active else None


def render_lane(lane: Lane, prompt: str, leader: bool) -> str:
    stats = lane.stats()
    rate = f"{stats.tokens_per_s:.1f} tok/s" if stats.tokens_per_s else "– tok/s"
    badge = " (finished)" if lane.done else (" ◀ ahead" if leader else "")
    head = (f'<div class="race-head"><b>{escape(lane.name)}{badge}</b>'
            f'<span class="race-rate" data-lane-rate="{escape(lane.name)}">{rate}</span></div>'
            f'<div class="status-line">{stats.new_tokens} tokens · {stats.target_forwards} target forwards · '
            f'{lane.clock_s:.2f} s of compute</div>')
    return head + render_tokens(lane.events, prompt, streaming=not lane.done)


def race_summary(base: Lane, spec: Lane) -> str:
    b, s = base.stats().tokens_per_s, spec.stats().tokens_per_s
    if not (b and s):
        return ""
    verdict = "faster" if s >= b else "slower"
    return render_status(f"Speculative decoding ran {s / b:.2f}× the target-only speed ({verdict}) on this "
                         f"prompt: {s:.1f} vs {b:.1f} tokens per second of compute.")


def _lanes_update(lanes: list[Lane], prompt: str) -> dict:
    base, spec = lanes
    ahead = max(lanes, key=lambda lane: compute_stats(lane.events).new_tokens)
    return {"race_base": render_lane(base, prompt, ahead is base and not base.done),
            "race_spec": render_lane(spec, prompt, ahead is spec and not spec.done)}


def race(lab: Lab, session: Session, prompt, clean_whitespace, target, draft, target_custom, draft_custom,
         k, temperature, top_p, top_k, max_new_tokens, seed):
    """Generator for the Race tab: both lanes stream step by step until both finish (or Stop)."""
    with session.timed_run():
        try:
            settings = make_settings(k, temperature, top_p, top_k, max_new_tokens, seed)
            prep = yield from lab.prepare_pair(prompt, clean_whitespace, target, draft, target_custom, draft_custom)
            gens = [lab.engine.Generation(prep.target, None, prep.ids, settings),
                    lab.engine.Generation(prep.target, prep.draft, prep.ids, settings)]
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
            yield {**_lanes_update(lanes, prep.text), "race_summary": race_summary(*lanes), "error": "",
                   "status": render_status("Stopped." if session.stop_requested else "Race finished.")}
        except Exception as exc:  # noqa: BLE001
            yield error_update(exc)
