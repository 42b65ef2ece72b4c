"""The Generate tab's callbacks: Lab, the app's callbacks object (LabCore, what every tab shares, with Generate's
own: a run streamed, measured and shown; the inspector and step-through), and the session's HTML report (the
"Download report" button). Plain generators and functions yielding {output name: value} dicts.

They run without a server (tests drive them with a fake engine); wiring.py maps the dicts onto components,
leaving any output a dict does not name untouched (so errors never wipe the screen).
"""
from __future__ import annotations

import datetime as dt
import tempfile
import time
from html import escape
from pathlib import Path

from specdec.engine.theory import live_metrics
from specdec.runners.tuning import chosen_for, summary
from specdec.serving.shared_measurements import sharing_note
from specdec.ui.classroom import queue_note, shared_run_note
from specdec.serving.request import RunRequest
from specdec.serving.run_record import RunRecord
from specdec.ui.lab import LabCore, Prepared, error_update, final_status, measuring_status
from specdec.ui.session import Session
from specdec.ui.style import CSS
from specdec.ui.throttle import Throttle
from specdec.ui.views import inspector
from specdec.ui.views.cards import alpha_note, auto_card, render_cards, theory_note
from specdec.ui.views.plots import RUN_PLOTS, run_figures, throughput_figure
from specdec.ui.views.render import render_legend, render_status, render_tokens
from specdec.ui.views.report import (
    REPORT_CSS,
    definitions_html,
    figure_html,
    measurements_html,
    run_figure_set,
    settings_html,
    speedup_html,
    sweep_html,
    table_html,
)
from specdec.ui.views.tables import export_trace, steps_dataframe
from specdec.ui.views.verdict import render_progress, render_verdict

import gradio as gr
from plotly.offline import get_plotlyjs


class Lab(LabCore):
    """The app's callbacks object: LabCore (what every tab shares) and the Generate tab's callbacks: a run streamed,
    measured and shown, the inspector and step-through."""

    # --- Generate -------------------------------------------------------------------------------
    def generate(self, session: Session, request: RunRequest):
        """Generator for Run: the request's run streamed step by step, then measured; every view of it renders from
        its record (session.last_run)."""
        with session.timed_run():
            try:
                if session.vllm is not None:  # the sidebar's engine: a vLLM server (vllm_engine.py)
                    from specdec.ui.vllm.engine import generate as generate_on_vllm
                    yield from generate_on_vllm(self, session, request)
                    return
                prep = yield from self.prepare_request(request)
                record = yield from self.stream_run(session, request, prep)
                if record.stopped:
                    yield self.finish_view(record, status="Stopped: no speedup is measured for a partial run.")
                    return
                shown = self.finish_view(record, note="measuring…",
                                         status="Measuring the speedup: timed repeats of both decoders…",
                                         headline=render_progress("Measuring the speedup: speculative and "
                                                                  "target-only decoding, timed in pairs…"))
                yield shown
                time.sleep(self.settle_s)  # let the browser draw the plots before the timing starts
                yield from self.measure_view(session, prep, record, figures={k: shown[k] for k in RUN_PLOTS})
            except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
                yield error_update(exc)

    def measure_view(self, session: Session, prep: Prepared, record: RunRecord, figures: dict | None = None):
        """Generator: the speedup card tightens after every timed pair; the last update is complete (an
        API client gets only that one), with the throughput plot of the latest timed pair and the exports
        (with the measurement). figures: the run's plots already drawn from its events, reused."""
        shared = None
        for progress in self.measure_shared(session, prep, record):
            shared, record.estimate = progress.shared, progress.estimate or record.estimate
            if progress.role == "queued" and progress.estimate is None and not session.stop_requested:
                yield {"status": render_status(queue_note(progress))}
            elif record.estimate is not None and not record.estimate.final:
                yield {"cards": self.view_cards(record),
                       "status": render_status(measuring_status(record.estimate))
                       + render_progress("", record.estimate)}
        record.measured, record.baseline = self.measured_runs(session, prep, record)
        record.exports = export_trace(record)
        self.classroom.record_run(record)
        notes = " ".join(n for n in (record.shared_note, sharing_note(shared) if shared else "") if n)
        # complete: the API's final value; it names the pair, which the free name fields may have changed
        update = self.finish_view(record, status=f"{final_status(record.estimate)} {record.ran_words()} {notes}".strip(),
                                  headline=render_verdict(record.estimate), figures=figures)
        if record.baseline is not None:
            update["plot_throughput"] = throughput_figure(record.measured, record.baseline)
        yield update

    def stream_run(self, session: Session, request: RunRequest, prep: Prepared):
        """Generator: one token update per step (capped at 1/token_interval_s per second); returns the run's record
        (also session.last_run). Identical deterministic requests of several sessions watch one run (classroom.py);
        Stop leaves it, ending it if nobody else watches."""
        settings = request.settings
        gen = self.classroom.watch(prep, settings, lambda: self.engine.start(prep.target, prep.draft, prep.ids,
                                                                             settings))
        events, tokens, heavy = [], Throttle(self.token_interval_s), Throttle(self.heavy_interval_s)
        try:
            for event in gen:
                events.append(event)
                if session.stop_requested:
                    break
                if tokens.ready() or event.finished:
                    update = {"tokens": render_tokens(events, prep.text, streaming=True), "error": ""}
                    if heavy.ready():
                        update["cards"] = render_cards(live_metrics(events))
                        update["status"] = render_status(f"Step {event.index + 1}…") + render_progress(
                            f"Generating: step {event.index + 1} (the speedup is measured right after)")
                    yield update
        finally:
            gen.leave()
        # a Stop that lands after the last step has nothing left to stop: the run is complete
        finished = bool(events) and events[-1].finished
        result = gen.result()
        path = chosen_for(result.target_name)
        session.last_run = RunRecord(request, prep.text, result, engine="lab", path=path,
                                     compute=summary(path) if path is not None else "as loaded (not the measured auto)",
                                     stopped=session.stop_requested and not finished, shared_note=shared_run_note(gen))
        return session.last_run

    def view_cards(self, record: RunRecord, note: str = "") -> str:
        if record.vllm:  # a run on a vLLM server: its cards (vllm_engine.py)
            from specdec.ui.vllm.engine import view_cards
            return view_cards(record, note)
        return render_cards(record.result.metrics, record.estimate, record.result.metrics.memory, note,
                            theory_note(record.events, record.settings.max_new_tokens), alpha_note(record.events),
                            engine=record.path, auto=auto_card(record.plan, record.events))

    def finish_view(self, record: RunRecord, note: str = "", status: str = "", headline: str = "",
                    figures: dict | None = None) -> dict:
        """Everything about a finished (or stopped) run, from its record: tokens, cards, plots, steps table, exports;
        headline (HTML) follows the status line: the verdict, or the measurement's progress. figures: the run's
        plots when this record's were drawn already (drawing them is most of this view's time)."""
        if not record.exports:
            record.exports = export_trace(record)
        return {
            "tokens": render_tokens(record.events, record.prompt_text, empty_note="(no tokens)"),
            "cards": self.view_cards(record, note),
            **(figures or run_figures(record.events, record.result, record.baseline, record.result.metrics.memory)),
            "steps_table": steps_dataframe(record.events),
            "exports": record.exports,
            "status": render_status(status or "Run finished.") + headline,
            "error": "",
        }

    # --- the last run, kept in this browser -------------------------------------------------------
    def keep_run(self, session: Session) -> dict:
        """After a run: its record into the browser's storage (the lab's runs; a vLLM server's is not kept)."""
        record = session.last_run
        if record is None or record.engine != "lab" or record.stopped:
            return {}
        return {"run_store": record.to_store()}

    def restore_run(self, session: Session, stored) -> dict:
        """The page opens: the last run this browser kept comes back (tokens, cards, plots, steps table, exports,
        the inspector), from its record, with a line saying when it was made; nothing when there is none."""
        record = RunRecord.from_store(stored) if session.last_run is None else None
        if record is None:
            return {}
        session.last_run = record
        when = time.strftime("%H:%M", time.localtime(record.at))
        update = self.finish_view(record, status=f"Your last run in this browser, made at {when} (restored: its "
                                                 "figures as measured then). Press Run to make a new one.",
                                  headline=render_verdict(record.estimate))
        update["status"] = update["status"].replace('class="status-line"', 'class="status-line" data-restored', 1)
        if record.baseline is not None and record.measured is not None:
            update["plot_throughput"] = throughput_figure(record.measured, record.baseline)
        return {**update, **self.first_interesting_step(session)}

    # --- inspector & step-through ---------------------------------------------------------------
    def show_step(self, session: Session, step, position: str | None = None) -> dict:
        """Step-through: the output up to `step` (highlighted), its story, and one of its tokens."""
        event = session.event(step)
        if event is None:
            return {"step_story": '<div class="explain">Run a generation first.</div>'}
        keys = [key for _, key in inspector.position_choices(event)]
        position = position if position in keys else inspector.default_position(event)
        record = session.last_run
        return {
            "inspect_step": gr.update(value=event.index, maximum=max(len(record.events) - 1, 1)),
            "inspect_pos": gr.update(choices=inspector.position_choices(event), value=position),
            "replay": render_tokens(record.events[: event.index + 1], record.prompt_text, current_step=event.index),
            "step_story": inspector.narrate_step(event),
            **self.show_token(session, event.index, position),
        }

    def show_token(self, session: Session, step, position) -> dict:
        event = session.event(step)
        if event is None:
            return {}
        if session.last_run.vllm:
            from specdec.ui.vllm.engine import inspector_note
            return inspector_note(event)
        return {"inspect_plot": inspector.inspect_figure(event, position),
                "inspect_details": inspector.inspect_details(event, position)}

    def first_interesting_step(self, session: Session) -> dict:
        """After a run: the inspector opens on the first rejected draft (else shows step 0, closed)."""
        events = session.last_run.events if session.last_run else []
        step = next((e.index for e in events if any(d.evaluated and not d.accepted for d in e.drafted)), None)
        if step is None:
            return self.show_step(session, 0)
        return {**self.show_step(session, step), "inspector_box": gr.update(open=True)}

    def step_by(self, session: Session, step, delta: int) -> dict:
        return self.show_step(session, int(step or 0) + delta)

    def select_token(self, session: Session, evt: gr.SelectData) -> dict:
        """A click on a token in the output opens the inspector on it."""
        step, position = evt.index if isinstance(evt.index, (list, tuple)) else (evt.index, None)
        return {**self.show_step(session, step, position), "inspector_box": gr.update(open=True)}


def build_report(lab: Lab, session: Session, made: dt.datetime | None = None) -> str:
    """The whole report as one HTML document (the session must have a last run)."""
    record = session.last_run
    made = (made or dt.datetime.now()).strftime("%Y-%m-%d %H:%M")
    figures = "".join(figure_html(fig) for fig in run_figure_set(record).values())
    body = (f"<h1>SpecDec Lab report</h1><p class='meta'>Made {made} · {escape(record.ran_words())}</p>"
            f"<h2>Settings</h2>{settings_html(record)}"
            f"<h2>Measured speedup</h2>{speedup_html(record)}"
            f"<h2>Metrics</h2>{lab.view_cards(record)}"
            f"<h2>Output, each token coloured by its fate</h2>{render_legend()}"
            f"{render_tokens(record.events, record.prompt_text)}"
            f"<h2>Figures</h2><p class='explain-note'>The camera icon on each figure downloads it as SVG.</p>{figures}"
            f"<h2>Steps</h2>{table_html(steps_dataframe(record.events))}"
            f"{sweep_html(session.sweep_rows)}{measurements_html(session)}{definitions_html()}")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>SpecDec Lab report · {made}</title>"
            f"<style>{REPORT_CSS}{CSS}</style><script>{get_plotlyjs()}</script></head>"
            f"<body><main>{body}</main></body></html>")


def write_report(lab: Lab, session: Session, folder: str | None = None) -> str:
    path = Path(folder or tempfile.mkdtemp(prefix="specdec-")) / "specdec-report.html"
    path.write_text(build_report(lab, session), encoding="utf-8")
    return str(path)


def download_report(lab: Lab, session: Session) -> dict:
    """The "Download report" button: the session's report as a file, or a message when there is no run yet."""
    try:
        if session.last_run is None or session.last_run.result is None:
            raise ValueError("No run to report yet: press Run first (the report is made from the session's last run).")
        return {"report_file": write_report(lab, session), "error": ""}
    except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
        return error_update(exc)
