"""The session's HTML report, piece by piece: the last run's settings, its measured speedup with the interval, its
figures, the session's sweep and every measurement made in the session, as HTML a teacher can hand out. Plain
functions; tabs/generate/callbacks.build_report puts them in one self-contained file (plotly.js inlined once,
about 5 MB, each figure a div drawn by it: the file opens offline and loads nothing from the network)."""
from __future__ import annotations

from html import escape

from specdec.models.memory import format_bytes
from specdec.planning.choice import AUTO
from specdec.serving.run_record import RunRecord
from specdec.ui.session import Session
from specdec.ui.views.plots import run_figures, throughput_figure
from specdec.ui.views.sweep import sweep_update
from specdec.ui.views.tables import DEFINITIONS

import pandas as pd
import plotly.graph_objects as go

# Gradio's theme variables used by style.CSS, given fixed values outside the app.
REPORT_CSS = """
:root { --border-color-primary: #d0d0d0; --background-fill-primary: #ffffff; --background-fill-secondary: #f6f6f6;
  --body-text-color-subdued: #666666; --color-accent: #0072B2; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { margin-bottom: 0; } .meta { color: #666; margin-top: 4px; }
table.report-table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
table.report-table td, table.report-table th { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: left; }
pre.prompt { white-space: pre-wrap; background: #f6f6f6; padding: 8px 12px; border-radius: 8px; }
.figure { margin: 8px 0 16px; }
"""
SETTING_LABELS = {"k": "K (largest, with a schedule)", "k_schedule": "K schedule", "temperature": "temperature",
                  "top_p": "top-p", "top_k": "top-k", "seed": "seed", "max_new_tokens": "max new tokens"}


def table_html(df: pd.DataFrame) -> str:
    return df.to_html(index=False, classes="report-table", border=0, na_rep="–")


def settings_html(record: RunRecord) -> str:
    """What ran, from the run's record: the models, the drafter that drafted and its family, the settings that ran
    (the schedule that chose K), the K each step drafted, the exercise and the device."""
    result, memory = record.result, record.result.metrics.memory
    drafted_by = "" if record.drafted_by in (None, record.draft) else f" → {record.drafted_by}"
    family = f" ({record.family})" if record.family else ""
    rows = [("target", result.target_name), ("draft", f"{record.draft}{drafted_by}{family}" if record.draft
                                             else "none (target only)"),
            *((label, getattr(record.settings, name)) for name, label in SETTING_LABELS.items()),
            ("K per step", record.k_words())]
    if record.exercise:
        rows.append(("exercise", record.exercise))
    if memory is not None:
        rows.append(("device", memory.device))
        if memory.target_weights:
            rows.append(("target weights", f"{memory.target_weights}, {format_bytes(memory.target_param_bytes)} held"))
    df = pd.DataFrame([(k, "off" if v is None else v) for k, v in rows], columns=["setting", "value"])
    return f"{table_html(df)}<p>Prompt (as tokenised):</p><pre class='prompt'>{escape(record.prompt_text)}</pre>"


def speedup_html(record: RunRecord) -> str:
    est = record.estimate
    if est is not None and est.fault is not None:
        return f"<p class='key-result'>No speedup reported: {escape(est.describe())}.</p>"
    if est is None or est.ratio is None:
        return "<p class='key-result'>No speedup measured: the run was stopped before the timed repeats.</p>"
    rates = ""
    if est.lead_tokens_per_s and est.follow_tokens_per_s:
        rates = (f" Speculative {est.lead_tokens_per_s:.1f} tokens/s vs target-only "
                 f"{est.follow_tokens_per_s:.1f} tokens/s (medians).")
    return (f"<p class='key-result' data-verdict='{escape(est.verdict or '')}'>Speedup vs target-only: "
            f"{escape(est.describe())}{': ' + escape(est.verdict) if est.verdict else ''}</p>"
            f"<p class='explain-note'>Timed repeats of speculative and target-only decoding over the same "
            f"{est.new_tokens} new tokens, interleaved, apart from the streamed run.{escape(rates)}</p>")


def run_figure_set(record: RunRecord) -> dict[str, go.Figure]:
    """The Generate tab's plots as they show after measuring (the timed pair's throughput when there is one)."""
    figures = run_figures(record.events, record.result, record.baseline, record.result.metrics.memory)
    if record.baseline is not None:
        figures["plot_throughput"] = throughput_figure(record.measured, record.baseline)
    return figures


def figure_html(fig: go.Figure) -> str:
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "svg"}}
    return f"<div class='figure'>{fig.to_html(full_html=False, include_plotlyjs=False, config=config)}</div>"


def sweep_html(rows) -> str:
    if not rows:
        return ""
    update = sweep_update(rows)
    figures = "".join(figure_html(v) for v in update.values() if isinstance(v, go.Figure))
    return (f"<h2>Sweep</h2>{update['sweep_best']}{figures}{table_html(update['sweep_table'])}"
            f"<p class='explain-note'>acc. rate = accepted / drafted · α = accepted / evaluated · speedup = median "
            f"of timed pairs with its 95% interval.</p>")


def measurement_row(key, est) -> dict:
    """One measured configuration: the lab's (target, device, dtype, draft, prompt ids, settings) or a vLLM pair of
    servers' (specdec/vllm/engine.measurement_key)."""
    if key[0] == "vllm":
        _, url, model, baseline_url, prompt_ids, settings = key
        target, draft, device, dtype = model, f"vLLM server {url}", f"vs baseline server {baseline_url}", "–"
    else:  # a drafter that learns across requests adds what it had learnt (its fingerprint) after these
        target, device, dtype, draft, prompt_ids, settings = key[:6]
    return {"target": target, "draft": draft, "device": device, "dtype": dtype, "K": settings.k,
            "K schedule": "auto" if draft == AUTO else settings.k_schedule, "T": settings.temperature, "seed": settings.seed,
            "prompt tokens": len(prompt_ids), "speedup": est.describe(), "verdict": est.verdict or "–"}


def measurements_html(session: Session) -> str:
    """Every configuration measured in this session (Generate, Race and Sweep share the cache)."""
    rows = [measurement_row(key, m.estimate()) for key, m in session.measurements.items()]
    if not rows:
        return ""
    return f"<h2>Every measurement in this session</h2>{table_html(pd.DataFrame(rows))}"


def definitions_html() -> str:
    items = "".join(f"<dt>{escape(name)}</dt><dd>{escape(text)}</dd>" for name, text in DEFINITIONS.items())
    return f"<h2>Definitions</h2><dl>{items}</dl>"
