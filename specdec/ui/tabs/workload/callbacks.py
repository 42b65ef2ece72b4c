"""The "Across requests" tab's callback (API: `workload`): a shipped workload's prompts (assets/workloads/*.json, each
request repeating the earlier ones' structure), in order, each decoded greedily by suffix decoding and by prompt
lookup, one update per request (views/workload.py draws them).

Suffix decoding drafts from this request and from the earlier requests' outputs; this run gives it a store of its
own, empty at the start and dropped at the end, so the first request always starts from nothing and no other run or
session is read or written. Prompt lookup sees the current request alone. Both outputs are the target's own
greedy text (the engine is exact), so they must be equal: the table says so per request."""
from __future__ import annotations

import json
import uuid

from specdec.drafters import suffix
from specdec.drafters.suffix import SuffixDrafter
from specdec.engine.events import DecodeSettings
from specdec.paths import ASSETS_DIR
from specdec.ui.lab import LabCore, error_update, relay
from specdec.ui.models import load_target_and_drafts, pick_name
from specdec.ui.session import Session
from specdec.ui.views import workload as view
from specdec.ui.views.render import render_status

WORKLOADS_DIR = ASSETS_DIR / "workloads"
ABOUT = {  # a shipped workload -> what its requests are (a file not named here is listed by its name)
    "chat-quotes": "one support chat, each request the conversation so far, quoting earlier answers",
    "code-edits": "six edits of one small Python class, each asking for the whole updated file",
    "customer-records": "six customer records, each written as JSON with the same keys",
}


def workload_choices() -> list[tuple[str, str]]:
    """(label, name) of every shipped workload."""
    names = sorted(path.stem for path in WORKLOADS_DIR.glob("*.json"))
    return [(f"{name}: {ABOUT[name]}" if name in ABOUT else name, name) for name in names]


def load_prompts(name: str) -> list[str]:
    """The prompts of the shipped workload `name` (only those: never a path the caller chose)."""
    if name not in {choice for _, choice in workload_choices()}:
        raise ValueError(f"Unknown workload {name!r}: choose one of the list.")
    prompts = json.loads((WORKLOADS_DIR / f"{name}.json").read_text())
    if not prompts or not all(isinstance(p, str) and p.strip() for p in prompts):
        raise ValueError(f"The workload {name!r} holds no prompts.")
    return prompts


def run_workload(lab: LabCore, session: Session, workload, target, target_custom, k, max_new_tokens):
    """Generator of {output name: value}: one update per request, then the complete picture."""
    with session.timed_run():
        try:
            prompts = load_prompts(workload)
            settings = DecodeSettings(k=int(k), max_new_tokens=int(max_new_tokens))
            yield {"status": render_status("Loading the target…"), "error": ""}
            models = yield from relay(load_target_and_drafts(lab.load, lab.engine.load_drafter,
                                                             pick_name(target, target_custom), ["prompt-lookup"]),
                                      lambda message: {"status": render_status(message)})
            yield from decode_in_order(lab, session, models[0], models[1], prompts, settings)
        except Exception as exc:  # noqa: BLE001 (every failure becomes a visible message)
            yield error_update(exc)


def decode_in_order(lab: LabCore, session: Session, target, lookup, prompts: list[str], settings: DecodeSettings):
    store = f"{target.name} · workload run {uuid.uuid4().hex}"  # this run's own store
    drafters = {"suffix": SuffixDrafter(target.real_vocab_size, target.device, store, owner=store),
                "prompt-lookup": lookup}
    rows: list[view.RequestRow] = []
    try:
        for request, text in enumerate(prompts, start=1):
            if session.stop_requested:
                yield {"status": render_status(f"Stopped after {len(rows)} of {len(prompts)} requests.")}
                return
            yield {"status": render_status(f"Request {request} of {len(prompts)}: decoding it with each drafter…")}
            ids = lab.engine.encode_prompt(target, text, True)
            runs = {name: lab.engine.generate(target, drafter, ids, settings) for name, drafter in drafters.items()}
            metrics = {name: run.metrics for name, run in runs.items()}
            rows.append(view.RequestRow(
                request, metrics["suffix"].new_tokens, {n: m.tokens_per_forward or 1.0 for n, m in metrics.items()},
                {n: m.acceptance_rate for n, m in metrics.items()}, {n: m.target_forwards for n, m in metrics.items()},
                runs["suffix"].token_ids == runs["prompt-lookup"].token_ids))
            done = request == len(prompts)
            yield {"workload_summary": view.summary(rows, len(prompts)),
                   "workload_per_forward": view.per_forward_figure(rows),
                   "workload_acceptance": view.acceptance_figure(rows), "workload_table": view.table(rows),
                   "status": render_status("Workload finished." if done else f"Request {request} of {len(prompts)} "
                                           "done.")}
    finally:
        suffix.STORES.pop(store, None)
