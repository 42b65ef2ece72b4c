"""The metric cards: HTML from a run's figures (events.RunMetrics) and its measured speedup."""
from __future__ import annotations

from html import escape

from specdec.engine.events import RunMetrics
from specdec.engine.theory import draft_capacity, expected_tokens_per_forward, measured_alpha
from specdec.measure.intervals import pairs_for_interval
from specdec.measure.sweep import THEORY_MIN_SHARE
from specdec.models.memory import format_bytes


def metric_card(label: str, value: str, sub: str = "", key: str = "") -> str:
    """One metric card (HTML): its label, value and sub-line; `key` names it (data-metric) for the CSS and tests."""
    return (f'<div class="card" data-metric="{key}"><div class="label">{escape(label)}</div>'
            f'<div class="value">{escape(value)}</div><div class="sub">{escape(sub)}</div></div>')


def speedup_text(est) -> str:
    """The speedup card's sub-line: interval or range, repeats, verdict and what was timed."""
    if est.has_interval:
        head = f"{est.confidence:.0%} interval {est.low:.2f}–{est.high:.2f} · {est.repeats} repeats"
    else:
        spread = f"range {est.smallest:.2f}–{est.largest:.2f} · " if est.repeats > 1 else ""
        head = (f"{spread}{est.repeats} repeat{'s' if est.repeats != 1 else ''}; a {est.confidence:.0%} interval "
                f"needs {pairs_for_interval(est.confidence)}")
    state = {"measuring": " · measuring…", "stopped": " · stopped"}.get(est.state, "")
    return f"{head}{state} · {est.new_tokens} tokens per timed run, timed apart from the streamed run"


def verdict_text(est) -> str:
    if est is None or est.ratio is None:
        return ""
    if est.verdict is None:
        return "too few repeats for a verdict" if est.final else "first estimate"
    return est.verdict


def _speedup_card(est, note: str) -> str:
    label = "Speedup vs target-only (measured)"
    if est is not None and est.fault is not None:
        return metric_card(label, "no figure", f"not a measurement of this run: {est.fault}", "speedup")
    if est is not None and est.above_bound:
        return metric_card(label, "…", est.describe(), "speedup")
    if est is None or est.ratio is None:
        return metric_card(label, "…" if note else "–", note or "measured once the run ends", "speedup")
    verdict = verdict_text(est)
    return (f'<div class="card card-key" data-metric="speedup" data-verdict="{escape(est.verdict or "")}">'
            f'<div class="label">{escape(label)}</div><div class="value">{est.ratio:.2f}×</div>'
            f'<div class="verdict">{escape(verdict)}</div><div class="sub">{escape(speedup_text(est))}</div></div>')


def _memory_card(memory) -> str:
    if memory is None:
        return metric_card("Memory", "–", "reported when the run ends", "memory")
    weights = memory.target_param_bytes + memory.draft_param_bytes
    kv = memory.target_kv_bytes + memory.draft_kv_bytes
    peak = memory.peak_device_bytes if memory.peak_device_bytes is not None else memory.process_rss_bytes
    peak_name = "peak device" if memory.peak_device_bytes is not None else "process RSS"
    which = f" (target: {memory.target_weights})" if memory.target_weights else ""
    sub = f"weights {format_bytes(weights)}{which} + KV {format_bytes(kv)} · {peak_name} {format_bytes(peak)}"
    return metric_card("Memory", format_bytes(weights + kv), sub, "memory")


def alpha_note(events) -> str:
    """α (accepted / evaluated) next to the acceptance rate, labelled (the two differ)."""
    alpha = measured_alpha(events)
    return "" if alpha is None else f" · α (accepted / evaluated) = {alpha:.2f}"


def theory_note(events, max_new_tokens: int | None = None) -> str:
    """What E = (1 - α^(K+1)) / (1 - α) predicts for this run's K and its measured α; nothing where the
    drafter proposed far fewer than K tokens a step (the formula assumes K every step)."""
    alpha, k = measured_alpha(events), max((e.k for e in events), default=0)
    if alpha is None or k == 0:
        return ""
    capacity = draft_capacity(events, k, max_new_tokens) if max_new_tokens else 0
    if capacity and sum(len(e.drafted) for e in events) / capacity < THEORY_MIN_SHARE:
        return " · the drafter proposed fewer than K tokens in many steps: no i.i.d. theory"
    expected = expected_tokens_per_forward(alpha, k)
    return f" · theory E = {expected:.2f} at α = {alpha:.2f} (accepted / evaluated), K = {k}"


def _engine_card(path) -> str:
    """The path the measured `auto` chose for the target (specdec.runners.tuning.TunedPath) and the figures behind it."""
    chosen = path.chosen
    value = path.label.replace(", ", " · ")
    figures = (f"{chosen.runner}; measured here: step {chosen.step_ms:.1f} ms, verify {chosen.verify_ms:.1f} ms"
               if chosen is not None else "measured here")
    others = [f"{c.label} {c.cost_ms:.1f} ms" + (f" (excluded: {c.excluded})" if c.excluded else "")
              for c in path.candidates if c is not chosen and c.cost_ms is not None]
    sub = figures + (f" · step + verify of the others: {'; '.join(others)}" if others else "")
    if getattr(path, "threads_by_rows", None):  # new tokens per forward: the thread count measured fastest for them
        sub += " · " + ", ".join(f"{rows} new token{'s' if rows != '1' else ''}: {count} "
                                 f"thread{'s' if count != 1 else ''}" for rows, count in path.threads_by_rows.items())
    return metric_card("Engine path (auto, measured)", value, sub, "engine")


def auto_card(choice: dict | None, events) -> str:
    """What the `auto` drafter chose (RunResult.auto) and, per step, whether speculation ran (StepEvent.decision):
    "speculation off: …" with the latest off step's figures when any step ran without it. "" for other runs."""
    decided = [e for e in events if e.decision]
    if choice is None and not decided:
        return ""
    off = [e for e in decided if e.decision == "off"]
    probes = sum(e.decision == "probe" for e in decided)
    if choice is not None and choice.get("drafter") is None:
        value = "target-only"
    elif decided and decided[-1].decision == "off":
        value = "speculation off"
    else:
        value = (choice or {}).get("drafter") or "speculating"
    lines = [choice["why"]] if choice is not None else []
    ks = [e.k for e in events if e.k]
    if ks:  # the K each step drafted: the auto schedule moves it, so the slider's K is only its ceiling
        spread = f"{min(ks)}" if min(ks) == max(ks) else f"{min(ks)}–{max(ks)}"
        lines.append(f"K per step: {spread} (the steps table and the K plot show each step's)")
    if off:
        lines.append(f"speculation off: {len(off)} of {len(decided)} steps ran the target alone"
                     f"{f' ({probes} probes)' if probes else ''}; last: {off[-1].decision_why}")
    elif decided:
        lines.append(f"speculation on every step; last: {decided[-1].decision_why}")
    return metric_card("Auto (drafter, K, on/off)", value, " · ".join(lines), "auto")


def render_cards(stats: RunMetrics, estimate=None, memory=None, note: str = "", theory: str = "",
                 alpha: str = "", engine=None, auto: str = "", memory_card: str = "") -> str:
    """Four primary cards of equal height: the measured speedup (an Estimate), tokens per target forward,
    acceptance rate (accepted / drafted, with α beside it), tokens/s of the streamed run; then, in a collapsed
    Details: the theory's figure, memory, (engine: a
    specdec.runners.tuning.TunedPath) the path the measured `auto` chose for the target, and (auto: auto_card's) the
    auto drafter's choice and its on/off steps. memory_card: a card in place of the memory one (a vLLM server's)."""
    rate, per_fwd, tps = stats.acceptance_rate, stats.tokens_per_forward, stats.tokens_per_s
    primary = [
        _speedup_card(estimate, note),
        metric_card("Tokens per target forward", "–" if per_fwd is None else f"{per_fwd:.2f}",
              f"{stats.new_tokens} tokens / {stats.target_forwards} forwards, bonus included (plain decoding: 1.00)",
              "tokens_per_forward"),
        metric_card("Acceptance rate (accepted / drafted)", "–" if rate is None else f"{rate:.0%}",
              f"{stats.accepted_tokens} of {stats.drafted_tokens} drafted tokens{alpha}", "acceptance"),
        metric_card("Tokens / s (this streamed run)", "–" if tps is None else f"{tps:.1f}",
              f"engine time {stats.wall_time_s:.2f} s", "tokens_per_s"),
    ]
    details = [memory_card or _memory_card(memory)] + ([_engine_card(engine)] if engine is not None else [])
    details += [auto] if auto else []
    theory_line = f'<div class="sub">{escape(theory.strip(" ·"))}</div>' if theory.strip(" ·") else ""
    return (f'<div class="cards cards-primary">{"".join(primary)}</div>'
            f'<details class="card-details" id="card-details"><summary>Details: memory, engine path'
            f'{", auto reasoning" if auto else ""}, theory</summary>{theory_line}'
            f'<div class="cards">{"".join(details)}</div></details>')
