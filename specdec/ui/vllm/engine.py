"""Generate on a running vLLM server: the sidebar's engine choice, and a run streamed, coloured and measured.

The choice lives in the browser session (Session.vllm): Lab.generate hands the run here when it is set, so
the Generate button, its Stop and its outputs are the lab's own. Tokens stream as vLLM sends them (plain
until the final chunk brings the request's per-step acceptance), then take their fates, with the lab's
renderers, cards and plots; what vLLM does not expose (p, q, the draws, rejected drafts' ids) is said so.
With a baseline server the speedup is measured with specdec/measure/speedup.py's rules.

On a public deployment (serving.limits.is_public: a Space, SPECDEC_PUBLIC=1 or --public, unless --no-public or
SPECDEC_PUBLIC=0) users cannot give URLs: only the operator's SPECDEC_VLLM_URL (and SPECDEC_VLLM_BASELINE_URL) are
used, and without them the vLLM engine is off.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Optional

from specdec import config
from specdec.engine.theory import live_metrics
from specdec.models.memory import format_bytes
from specdec.serving.limits import is_public
from specdec.serving.request import RunRequest
from specdec.serving.run_record import RunRecord
from specdec.ui.throttle import Throttle
from specdec.ui.views.cards import alpha_note, metric_card, render_cards
from specdec.ui.views.plots import run_figures, throughput_figure
from specdec.ui.views.render import render_status, render_tokens
from specdec.ui.views.tables import export_trace, steps_dataframe
from specdec.vllm import engine as vllm_engine
from specdec.vllm.client import VllmError
from specdec.vllm.launcher import record_for
from specdec.vllm.report import NOT_AVAILABLE, alignment_text, counters_text, run_record, vllm_figures_text
from specdec.vllm.server_info import NOT_EXPOSED

import gradio as gr

LAB, VLLM = "SpecDec Lab engine", "vLLM server"
ENGINES = (LAB, VLLM)


@dataclass(frozen=True)
class VllmChoice:
    url: str
    baseline: Optional[str] = None


def operator_urls() -> tuple[str, str]:
    return config.get("SPECDEC_VLLM_URL"), config.get("SPECDEC_VLLM_BASELINE_URL")


def build_engine_controls(c: dict) -> None:
    """The sidebar's engine radio and the server URLs (fixed by the operator on a public deployment)."""
    url, baseline = operator_urls()
    locked = is_public()
    c["engine"] = gr.Radio(list(ENGINES), value=LAB, label="Engine", elem_id="engine",
                           interactive=not locked or bool(url),
                           info="vLLM server: a running vLLM with speculative decoding (How it works has more)")
    c["vllm_url"] = gr.Textbox(url, label="vLLM server URL", placeholder="http://127.0.0.1:8000",
                               interactive=not locked, elem_id="vllm-url")
    c["vllm_baseline_url"] = gr.Textbox(baseline, label="Baseline server URL (same target, no speculation)",
                                        placeholder="for the measured speedup", interactive=not locked,
                                        elem_id="vllm-baseline-url")
    c["engine_note"] = gr.Markdown(engine_note(locked, url), elem_id="engine-note")


def engine_note(locked: bool, url: str) -> str:
    if locked and not url:
        return "The vLLM engine is off on this deployment (its operator sets SPECDEC_VLLM_URL to turn it on)."
    if locked:
        return "vLLM server: set by this deployment's operator."
    return "`python -m specdec vllm serve --method ngram --baseline` starts a pair and prints their URLs."


def choose_engine(session, engine, url, baseline) -> dict:
    """Records the choice in the session; on a public deployment only the operator's URLs are used."""
    if engine != VLLM:
        session.vllm = None
        return {"engine_note": engine_note(is_public(), operator_urls()[0])}
    if is_public():
        url, baseline = operator_urls()
        if not url:
            session.vllm = None
            return {"engine_note": engine_note(True, ""), "engine": LAB}
    session.vllm = VllmChoice((url or "").strip(), (baseline or "").strip() or None)
    return {"engine_note": f"Generate runs on the vLLM server at {session.vllm.url or '(no URL yet)'}"
                           + (f", measured against {session.vllm.baseline}." if session.vllm.baseline else
                              " (give a baseline server for a measured speedup).")}


FIELDS = ("engine", "vllm_url", "vllm_baseline_url")


def record_field(name: str, session, value) -> dict:
    """One sidebar field changed: the session keeps each field's latest value apart and chooses from all three.

    Each change carries only its own field, so the order the changes arrive in does not matter: three changes
    made in quick succession travel as separate requests, and one reading all three fields as they were when it
    fired could arrive last and leave the session without the baseline the page shows."""
    session.engine_fields[name] = value
    fields = session.engine_fields
    return choose_engine(session, fields.get("engine", LAB), fields.get("vllm_url", ""),
                         fields.get("vllm_baseline_url", ""))


def wire_engine_controls(on, c: dict, session) -> None:
    """Each of the three fields' changes records that field alone (record_field); the URL fields record again when
    they lose focus, by then with their settled value (a change sent while a pasted value was still being stored
    could carry the field's previous one)."""
    outputs = {"engine_note": c["engine_note"], "engine": c["engine"]}
    for name in FIELDS:
        triggers = [c[name].change] + ([c[name].blur] if name != "engine" else [])
        for trigger in triggers:
            on(trigger, functools.partial(record_field, name), [session, c[name]], outputs,
               api_visibility="private", concurrency_id="engine-choice", concurrency_limit=1)


# --- a run ------------------------------------------------------------------------------------------

@dataclass
class VllmView:
    """A vLLM run's own records, kept with its run record (RunRecord.vllm) for the cards, the exports and the report."""

    run: object  # specdec.vllm.engine.VllmRun
    lead: object  # specdec.vllm.engine.Server
    baseline: object = None
    counters: object = None  # the server-wide /metrics counters read after the run (SpecCounters)
    rss_bytes: Optional[int] = None  # the server's process group's RSS (None: not exposed by its API)


def connect_pair(choice: VllmChoice, need_baseline: bool = False):
    """(lead, baseline or None): the speculative server and the baseline, checked (same target); the Race and the
    Sweep need the baseline."""
    if need_baseline and not choice.baseline:
        raise VllmError("give a baseline server URL in the sidebar (the same target without speculation): "
                        "`python -m specdec vllm serve --baseline` starts one")
    lead = vllm_engine.connect(choice.url, speculative=True, record_for=record_for)
    baseline = None
    if choice.baseline:
        baseline = vllm_engine.connect(choice.baseline, lead.info.model, speculative=False, record_for=record_for)
        vllm_engine.check_same_model(lead, baseline)
    return lead, baseline


def connect_baseline(choice: VllmChoice):
    """The sidebar's baseline server alone (the vLLM Sweep starts its speculative servers itself)."""
    if not choice.baseline:
        raise VllmError("give a baseline server URL in the sidebar (the target without speculation): the vLLM sweep "
                        "measures each server it starts against it (`python -m specdec vllm serve --method none`)")
    return vllm_engine.connect(choice.baseline, speculative=False, record_for=record_for)


def server_settings(lead, settings):
    """The settings a vLLM run uses: K is the server's (fixed when it started)."""
    if settings.k_schedule != "constant":
        raise VllmError("a vLLM server's K is fixed when it starts: choose the constant K schedule")
    return replace(settings, k=lead.info.k or settings.k)


def generate(lab, session, request: RunRequest):
    """Generator of {output: value} updates (Lab.generate's, for a vLLM server); errors go to Lab.generate."""
    choice: VllmChoice = session.vllm
    yield {"status": render_status(f"Connecting to the vLLM server at {choice.url}…"), "error": ""}
    lead, baseline = connect_pair(choice)
    settings = server_settings(lead, request.settings)
    ids = vllm_engine.encode(lead, request.prompt, request.chat)
    record = yield from stream(lab, session, request, lead, ids, settings)
    record.vllm.baseline = baseline
    if record.stopped:
        yield finish(record, status="Stopped: no speedup is measured for a partial run.")
        return
    if baseline is None:
        yield finish(record, status=f"Done on vLLM ({lead.info.method}, K={lead.info.k}). Give a baseline server URL "
                                    f"for a measured speedup.")
        return
    yield finish(record, note="measuring…", status="Measuring the speedup against the baseline server…")
    record.policy = lab.policy
    for record.estimate in vllm_engine.measure_speedup(lead, baseline, ids, settings, cache=session.measurements,
                                                      policy=lab.policy, should_stop=lambda: session.stop_requested):
        if not record.estimate.final:
            yield {"cards": view_cards(record), "status": render_status(f"Measuring: {record.estimate.describe()}…")}
    m = session.measurements[vllm_engine.measurement_key(lead, baseline, ids, settings)]
    record.measured, record.baseline = m.lead_result, m.follow_result
    yield finish(record, status=f"Done. Speedup vs the baseline server: {record.estimate.describe()}.")


def stream(lab, session, request: RunRequest, lead, ids, settings):
    """Streams the completion (plain tokens until vLLM's record arrives); returns the run's record."""
    gen, tokens = vllm_engine.stream_run(lead, ids, settings), Throttle(lab.token_interval_s)
    events, run, stopped = [], None, False
    while True:
        try:
            events = next(gen)
        except StopIteration as stop:
            run = stop.value
            break
        if session.stop_requested:
            gen.close()
            stopped = True
            break
        if tokens.ready():
            yield {"tokens": render_tokens(events, request.prompt, streaming=True, step_marks=False),
                   "cards": render_cards(live_metrics(events)),
                   "status": render_status("Streaming from vLLM: fates arrive with its final chunk…")}
    if run is None:  # stopped: show what arrived, uncoloured
        run = _partial(lead, ids, settings, events)
    session.last_run = RunRecord(request, request.prompt, run.result, engine="vllm",
                                 compute=f"vLLM server {lead.label}", stopped=stopped, vllm=VllmView(run, lead))
    return session.last_run


def _partial(lead, ids, settings, events):
    from specdec.vllm.fates import Alignment, run_result

    result = run_result(events, ids, sum(e.other_time_s for e in events), settings, lead.info.model, lead.label)
    return vllm_engine.VllmRun(result, Alignment((), (), False), None, None)


def memory_card(rss_bytes: Optional[int]) -> str:
    """The server's resident memory where the lab's launcher started it on this machine, else not exposed."""
    if rss_bytes is None:
        return metric_card("Memory (vLLM server)", "–", f"{NOT_EXPOSED} (the lab reads a server's RSS only where its "
                     "launcher started it, on this machine)", "memory")
    return metric_card("Memory (vLLM server)", format_bytes(rss_bytes), "resident memory of the server's processes (API "
                 "server, engine core, workers), from /proc; the draft's share is not exposed", "memory")


def view_cards(record: RunRecord, note: str = "") -> str:
    """The lab's cards (acceptance rate with α, tokens per target forward, tokens/s, the measured speedup) and
    vLLM's: its own figures, the server-wide counters, what the server runs, what it does not expose."""
    v = record.vllm
    html = render_cards(record.result.metrics, record.estimate, None, note, "", alpha_note(record.events),
                        memory_card=memory_card(v.rss_bytes))
    length = (v.run.spec or {}).get("mean_acceptance_length")
    extra = [metric_card("vLLM mean acceptance length", "–" if length is None else f"{length:.2f}",
                   vllm_figures_text(v.run.spec), "vllm"),
             metric_card("vLLM server counters (/metrics)", "–" if v.counters is None or v.counters.mean_acceptance_length
                   is None else f"{v.counters.mean_acceptance_length:.2f}", counters_text(v.counters),
                   "vllm_counters"),
             metric_card("vLLM server", f"{v.lead.info.method}, K={v.lead.info.k}", v.lead.info.describe(), "vllm_server"),
             metric_card("Not available from vLLM", "p, q, draws", f"{NOT_AVAILABLE}. {alignment_text(v.run.alignment)}",
                   "vllm_missing")]
    return html[: -len("</div>")] + "".join(extra) + "</div>"


def finish(record: RunRecord, note: str = "", status: str = "") -> dict:
    """Everything about a finished (or stopped) vLLM run: tokens, cards (with the server's counters and memory read
    now), plots, steps table and the exports (CSV / JSON trace with vLLM's record)."""
    v = record.vllm
    v.counters, v.rss_bytes = _read_safely(vllm_engine.server_counters, v.lead), vllm_engine.server_rss_bytes(v.lead)
    record.exports = export_trace(record, extra=run_record(v.run, v.lead, v.baseline, v.counters, v.rss_bytes))
    figures = run_figures(record.events, record.result, record.baseline, None)
    if record.baseline is not None:
        figures["plot_throughput"] = throughput_figure(record.measured, record.baseline)
    return {"tokens": render_tokens(record.events, record.prompt_text, empty_note="(no tokens)"),
            "cards": view_cards(record, note), **figures, "steps_table": steps_dataframe(record.events),
            "exports": record.exports, "status": render_status(status), "error": ""}


def _read_safely(read, server):
    """A figure read after the run; a server gone by then leaves it unknown rather than failing the run."""
    try:
        return read(server)
    except VllmError:
        return None


def inspector_note(event) -> dict:
    """The inspector for a vLLM run: the step's fates, and no p/q plot (vLLM does not expose them)."""
    return {"inspect_details": f'<div class="explain">Step {event.index}: {event.k} drafted, {event.num_accepted} '
                               f'accepted. {NOT_AVAILABLE}.</div>'}


HOW_IT_WORKS = """### The same views on vLLM (docs/vllm.md)
With **Engine: vLLM server** in the sidebar, Generate streams a running vLLM server's tokens and colours each from
vLLM's per-request record (`per_step_accepted` / `per_step_drafted`): step i gives its accepted drafts, then one
token of the target's, a correction or a bonus. vLLM's *draft acceptance rate* is the lab's acceptance rate; its
*mean acceptance length* (1 + accepted / verification steps, bonus included) leaves out the prefill's token and
steps that drafted nothing. p, q and the draws are not exposed by vLLM, so the inspector shows none. The Race
runs the speculative server's completion, then the baseline server's, and measures the speedup; the Sweep starts one
server per draft and K (minutes each on a CPU), measures each against the baseline server and stops it.

How the lab's figures compare with vLLM's on the same workload, and the engines' speed: docs/vllm.md,
"Lab engine vs vLLM".
"""
