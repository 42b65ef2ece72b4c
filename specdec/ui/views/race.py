"""The Race's views: each lane's head (its tokens/s, tokens, target forwards and clock) over its coloured tokens, and
the summary (the measured speedup and its verdict, then what this one race showed). A lane is the Race's Lane
(tabs/race/callbacks.py) or the vLLM Race's ServerLane: anything with name, events, done, clock_s, clock_word and
stats()."""
from __future__ import annotations

from html import escape

from specdec.engine.theory import live_metrics
from specdec.ui.views.render import render_key_result, render_tokens


def render_lane(lane, prompt: str, leader: bool, step_marks: bool = True) -> str:
    stats = lane.stats()
    rate = f"{stats.tokens_per_s:.1f} tok/s" if stats.tokens_per_s else "– tok/s"
    badge = " (finished)" if lane.done else (" ◀ ahead" if leader else "")
    head = (f'<div class="race-head"><b>{escape(lane.name)}{badge}</b>'
            f'<span class="race-rate" data-lane-rate="{escape(lane.name)}">{rate}</span></div>'
            f'<div class="status-line">{stats.new_tokens} tokens · {stats.target_forwards} target forwards · '
            f'{lane.clock_s:.2f} s {lane.clock_word}</div>')
    return head + render_tokens(lane.events, prompt, streaming=not lane.done, step_marks=step_marks)


def race_rates(base, spec) -> str:
    b, s = base.stats().tokens_per_s, spec.stats().tokens_per_s
    if not (b and s):
        return ""
    return f"In this race: {s:.1f} vs {b:.1f} tokens per second of compute (one run each, for watching)."


def race_summary(base, spec, est=None) -> str:
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


def stopped_summary(base, spec) -> str:
    return render_key_result(f"Stopped: no verdict for a partial race ({spec.stats().new_tokens} speculative and "
                             f"{base.stats().new_tokens} target-only tokens so far).")


def lanes_update(lanes: list, prompt: str) -> dict:
    base, spec = lanes
    ahead = max(lanes, key=lambda lane: live_metrics(lane.events).new_tokens)
    return {"race_base": render_lane(base, prompt, ahead is base and not base.done, step_marks=False),
            "race_spec": render_lane(spec, prompt, ahead is spec and not spec.done)}
