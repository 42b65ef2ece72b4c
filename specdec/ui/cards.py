"""Run statistics computed from StepEvents, and the metric cards that show them."""
from __future__ import annotations

from html import escape

from specdec.theory import RunStats, expected_tokens_per_forward, measured_alpha, measured_speedup


def format_bytes(n: int | None) -> str:
    if n is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _card(label: str, value: str, sub: str = "", key: str = "") -> str:
    return (f'<div class="card" data-metric="{key}"><div class="label">{escape(label)}</div>'
            f'<div class="value">{escape(value)}</div><div class="sub">{escape(sub)}</div></div>')


def _speedup_card(stats: RunStats, baseline: RunStats | None, baseline_note: str) -> str:
    ratio = measured_speedup(stats, baseline)
    if ratio is None:
        return _card("Speedup vs target-only", "…" if baseline_note else "–", baseline_note, "speedup")
    sub = f"baseline measured: {baseline.tokens_per_s:.1f} tok/s, same prompt & settings"
    return _card("Speedup vs target-only", f"{ratio:.2f}×", sub, "speedup")


def _memory_card(memory) -> str:
    if memory is None:
        return _card("Memory", "–", "reported when the run ends", "memory")
    weights = memory.target_param_bytes + memory.draft_param_bytes
    kv = memory.target_kv_bytes + memory.draft_kv_bytes
    peak = memory.peak_device_bytes if memory.peak_device_bytes is not None else memory.process_rss_bytes
    peak_name = "peak device" if memory.peak_device_bytes is not None else "process RSS"
    sub = f"weights {format_bytes(weights)} + KV {format_bytes(kv)} · {peak_name} {format_bytes(peak)}"
    return _card("Memory", format_bytes(weights + kv), sub, "memory")


def theory_note(events) -> str:
    """What (1 - a^(K+1)) / (1 - a) predicts for this run's K and its measured alpha."""
    alpha, k = measured_alpha(events), max((e.k for e in events), default=0)
    if alpha is None or k == 0:
        return ""
    return f" · theory {expected_tokens_per_forward(alpha, k):.2f} at measured α={alpha:.2f}, K={k}"


def render_cards(stats: RunStats, baseline: RunStats | None = None, memory=None,
                 baseline_note: str = "", theory: str = "") -> str:
    """Acceptance rate, tokens per target forward (with the theory's figure), tokens/s, measured
    speedup, memory."""
    rate, per_fwd, tps = stats.acceptance_rate, stats.tokens_per_forward, stats.tokens_per_s
    cards = [
        _card("Acceptance rate", "–" if rate is None else f"{rate:.0%}",
              f"{stats.accepted} of {stats.drafted} drafted tokens", "acceptance"),
        _card("Tokens per target forward", "–" if per_fwd is None else f"{per_fwd:.2f}",
              f"{stats.new_tokens} tokens / {stats.target_forwards} forwards, bonus included{theory}",
              "tokens_per_forward"),
        _card("Tokens / s", "–" if tps is None else f"{tps:.1f}",
              f"engine time {stats.engine_s:.2f} s", "tokens_per_s"),
        _speedup_card(stats, baseline, baseline_note),
        _memory_card(memory),
    ]
    return f'<div class="cards">{"".join(cards)}</div>'
