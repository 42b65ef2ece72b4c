"""The result first, in words: one large sentence after a run, from the measurement's own verdict
(specdec.measure.speedup.Estimate.verdict), and the progress box while the timed pairs run (what is being
measured, how many pairs so far, and why Run waits)."""
from __future__ import annotations

from html import escape

from specdec.measure.intervals import pairs_for_interval

BUSY = ("Run waits until the measurement ends (one timed run at a time on this machine, so timings never "
        "overlap); Stop ends it now.")


def _pairs(n: int) -> str:
    return f"{n} paired run{'s' if n != 1 else ''}"


def verdict_sentence(est) -> str:
    """'1.42× faster than the target alone — 95% interval 1.37–1.48, 8 paired runs', 'No measurable difference…',
    'Slower: 0.91×…', or what is missing for a verdict."""
    if est is None or est.ratio is None or est.repeats == 0:
        return "Stopped before the first timed pair: no speedup measured."
    interval = (f"{est.confidence:.0%} interval {est.low:.2f}–{est.high:.2f}, {_pairs(est.repeats)}"
                if est.has_interval else "")
    if est.verdict == "faster":
        return f"{est.ratio:.2f}× faster than the target alone — {interval}"
    if est.verdict == "slower":
        return f"Slower: {est.ratio:.2f}× the target alone's speed — {interval}"
    if est.verdict is not None:
        return f"No measurable difference from the target alone ({est.ratio:.2f}×) — {interval}, which contains 1"
    return (f"{est.ratio:.2f}× the target alone's speed from {_pairs(est.repeats)}: too few for a verdict "
            f"(a {est.confidence:.0%} interval needs {pairs_for_interval(est.confidence)})")


def render_verdict(est) -> str:
    """The sentence, large (CSS .verdict-big), with data-verdict for tests and styling."""
    verdict = (est.verdict if est is not None else None) or "none"
    return (f'<div class="verdict-big" data-verdict="{escape(verdict)}" role="status">'
            f"{escape(verdict_sentence(est))}</div>")


def render_progress(what: str, est=None) -> str:
    """The box while a run is under way: what is happening, pairs so far, and why Run waits."""
    if est is not None and est.ratio is not None:
        need = pairs_for_interval(est.confidence)
        so_far = (f"{_pairs(est.repeats)} so far, {est.ratio:.2f}× for now"
                  + (f" (a {est.confidence:.0%} interval needs {need})" if est.repeats < need else ""))
        what = (f"Measuring the speedup: speculative and target-only decoding, timed in pairs over the same "
                f"{est.new_tokens} tokens. {so_far}.")
    return (f'<div class="run-progress" role="status"><span class="spinner" aria-hidden="true"></span>'
            f"{escape(what)}<div class=\"busy\">{escape(BUSY)}</div></div>")
