"""The "Under load" tab's callbacks: a load measurement's record (the JSON of `python -m specdec load`, gathered as
load_shipped.combine does) shown as its curves, crossover, cost-model predictions, coloured requests and table
(views/load.py), and a live load test on the sidebar's vLLM servers (API: `load_test`).

The record is the only source of what the view shows: `show` draws from it and from the cost model's prediction for
its own run; the widgets only pick which of its runs, which devices to predict on and which concurrency's requests to
colour. Where no vLLM server is configured (always on a public deployment: serving.limits.is_public), the record is
the measurement shipped with the app (assets/measurements/vllm-load.json), labelled with its machine, commands and
date; a live run replaces it for this browser session."""
from __future__ import annotations

import json
import shlex
from datetime import datetime, timezone
from typing import Optional

from specdec.errors import SpecDecError
from specdec.measure.device_presets import THIS_MACHINE, measure_this_machine, preset, with_dtype
from specdec.paths import ASSETS_DIR
from specdec.serving.limits import is_public
from specdec.ui.lab import error_update
from specdec.ui.session import Session
from specdec.ui.views import load as view
from specdec.ui.views.render import render_status
from specdec.vllm import engine as vllm_engine
from specdec.vllm.client import VllmError
from specdec.vllm.load import LoadSettings, off_this_machine, parse_concurrencies
from specdec.vllm.load_report import machine_label, measure_reports, method_label
from specdec.vllm.load_shipped import SHIPPED, combine, model_curve, read_measurement

import gradio as gr

PROMPTS = ASSETS_DIR / "measurements" / "load-prompts.json"
PROMPTS_ARG = "assets/measurements/load-prompts.json"
DEFAULT_DEVICES = ["h100"]  # this machine is priced when ticked: it is measured first (a second or two)
NO_MEASUREMENT = ("No load measurement to show: this copy of the app ships none "
                  f"({SHIPPED.name} is missing) and no live run was made.")
LIVE_LIMITS = {"max_new_tokens": (8, 256), "pairs": (1, 12)}


def shipped_record() -> Optional[dict]:
    """{"measurement": the shipped set, "live": False}, or None where the app ships none (or an unlabelled one)."""
    try:
        return {"measurement": read_measurement(), "live": False}
    except SpecDecError:
        return None


def run_choices(record: Optional[dict]) -> list[tuple[str, int]]:
    """(label, index) of each run of the record: its method and K."""
    runs = (record or {}).get("measurement", {}).get("runs", [])
    return [(method_label(run), i) for i, run in enumerate(runs)]


def _gpu_dtype(device) -> str:
    return "bfloat16" if "bfloat16" in device.peak_flops else "float16"


def predictions(run: dict, devices, machine=measure_this_machine) -> tuple[list[tuple[str, dict]], list[str]]:
    """The cost model's curve for the run's target, drafter and K on each device key ((label, LoadCurve.to_dict())),
    and a note per device it could not price. This machine is priced in the run's dtype, its per-step overhead taken
    from the run's measured baseline step at its lowest concurrency (a server's step, model_curve's calibrate); a GPU
    preset in its half precision with its own overhead (what the same server would do there)."""
    curves, notes = [], []
    cs = sorted({r["concurrency"] for r in run["rows"]} | {64, 128, 256})
    for key in devices or []:
        try:
            if key == THIS_MACHINE:
                dtype = run["baseline"].get("dtype") or "float32"
                device = with_dtype(machine(), dtype)
                curve = model_curve(run, device, dtype, cs, calibrate=True)
                label = "this machine (step overhead from the measured baseline)"
            else:
                device = preset(key)
                curve = model_curve(run, device, _gpu_dtype(device), cs, calibrate=False)
                label = f"{device.label}, {_gpu_dtype(device)}"
            curves.append((label, curve.to_dict()))
        except Exception as exc:  # noqa: BLE001 (a prediction that cannot be made is a note, not an error)
            notes.append(f"no prediction on {key}: {exc}")
    return curves, notes


def show(session: Session, record: Optional[dict], index, devices, fate_concurrency, *, machine=measure_this_machine
         ) -> dict:
    """Everything the view shows, from `record` alone (and the cost model for its run)."""
    if not record:
        return {"load_source": render_status(NO_MEASUREMENT), "load_summary": "", "load_fates": ""}
    measurement = record["measurement"]
    runs = measurement["runs"]
    run = runs[int(index) if index is not None and 0 <= int(index) < len(runs) else 0]
    session.load_shown = run
    curves, notes = predictions(run, devices, machine)
    cs = view.sample_concurrencies(run)
    c = int(fate_concurrency) if fate_concurrency is not None and int(fate_concurrency) in cs else \
        (max(cs) if cs else None)
    note = f'<div class="tok-note">{"; ".join(notes)}</div>' if notes else ""
    return {"load_source": view.source_html(measurement, record.get("live", False)),
            "load_summary": view.summary_html(run, curves) + note,
            "load_throughput": view.throughput_figure(run), "load_latency": view.latency_figure(run),
            "load_speedup": view.speedup_figure(run, curves), "load_fates": view.fates_html(run, c),
            "load_table": view.table(run),
            "load_fate_c": gr.update(choices=cs, value=c)}


def pick_run(record: Optional[dict]) -> dict:
    """The run dropdown's choices for a new record (its first run)."""
    choices = run_choices(record)
    return {"load_run": gr.update(choices=choices, value=choices[0][1] if choices else None)}


def export(record: Optional[dict]) -> dict:
    if not record:
        return {"load_files": None}
    return {"load_files": view.export_files(record["measurement"])}


# --- a live load test on the sidebar's servers ---------------------------------------------------------------------

def live_allowed() -> bool:
    """A live load test is offered where the page may name servers: never on a public deployment."""
    return not is_public()


def _in_range(name: str, value, low: int, high: int) -> int:
    number = int(value)
    if not low <= number <= high:
        raise VllmError(f"{name.replace('_', ' ')} must be between {low} and {high}, got {value}")
    return number


def command_text(lead_url: str, baseline_url: str, settings: LoadSettings) -> str:
    """The CLI command that runs the same test."""
    return shlex.join(["python", "-m", "specdec", "load", "--vllm-url", lead_url, "--vllm-baseline-url", baseline_url,
                       "--concurrency", ",".join(map(str, settings.concurrencies)), "--prompts-file", PROMPTS_ARG,
                       "--max-new-tokens", str(settings.max_new_tokens), "--rounds", str(settings.rounds),
                       "--pairs", str(settings.pairs), "--settle-s", f"{settings.settle_s:g}", "--json"])


def live_settings(concurrency, max_new_tokens, pairs) -> LoadSettings:
    return LoadSettings(parse_concurrencies(concurrency),
                        _in_range("max_new_tokens", max_new_tokens, *LIVE_LIMITS["max_new_tokens"]),
                        pairs=_in_range("pairs", pairs, *LIVE_LIMITS["pairs"]))


def run_live(session: Session, concurrency, max_new_tokens, pairs, *, connect=None):
    """Generator: the load test on the sidebar's speculative and baseline servers, one update per concurrency (the
    record so far), then the whole record; connect(choice) -> (lead, baseline) replaces the servers' check (tests)."""
    with session.timed_run():
        try:
            if not live_allowed():
                raise VllmError("a live load test is not offered on a public deployment: the view shows the shipped "
                                "measurement")
            choice = session.vllm
            if choice is None or not choice.url or not choice.baseline:
                raise VllmError("choose Engine: vLLM server in the sidebar and give both URLs (the speculative "
                                "server and the baseline): `python -m specdec vllm serve --method ngram --baseline`")
            for url in (choice.url, choice.baseline):
                if off_this_machine(url):
                    raise VllmError(f"{url} is not on this machine: a load test sends hundreds of requests, so it "
                                    "runs only against 127.0.0.1, localhost or ::1")
            settings = live_settings(concurrency, max_new_tokens, pairs)
            from specdec.ui.vllm.engine import connect_pair

            lead, baseline = (connect or (lambda ch: connect_pair(ch, need_baseline=True)))(choice)
            prompts = json.loads(PROMPTS.read_text())
            ids = [vllm_engine.encode(lead, p, chat=True) for p in prompts]
            labels = {"machine": machine_label(), "command": command_text(choice.url, choice.baseline, settings),
                      "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
            yield {"status": render_status(f"Load test on {lead.info.describe()}: concurrency "
                                           f"{settings.concurrencies[0]} first…"), "error": ""}
            record = None
            for level, result in measure_reports(lead, baseline, ids, settings, labels):
                record = {"measurement": combine([result], notebook="(a live run: not in the notebook)"), "live": True}
                done = level.concurrency == settings.concurrencies[-1]
                yield {"load_record": record, **pick_run(record),
                       "status": render_status(
                           f"Concurrency {level.concurrency}: {level.estimate.describe()}"
                           + ("; finished." if done else "; measuring the next…"))}
                if session.stop_requested:
                    yield {"status": render_status(f"Stopped after concurrency {level.concurrency}.")}
                    return
        except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
            yield error_update(exc)
