"""What experiments/soak.py sends and how it judges each answer.

Every request carries a marker unique to its session and call ("soak-s3-c17") in its prompt, or a
sweep plan (drafts, K values, temperatures) of its own; an answer that shows another request's
marker or plan, settings other than those sent, or tokens that differ from an earlier identical
request ("replays", shared by all sessions) is cross-session bleed. Invalid requests must be
refused with the expected one-line message.
"""
from __future__ import annotations

import html
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

TARGET = "lab-target"
DRAFTS = ["lab-draft-distilled", "lab-draft-small", "lab-draft-tiny", "prompt-lookup"]
BASES = ["def fibonacci(n):\n", "import os\n\n\ndef list_python_files(folder):\n", "The os module provides a portable way",
         "A list comprehension is", "class Stack:\n    def push(self, item):\n"]
UNICODE = ["🦀 emoji 🎉 ", "مرحبا بالعالم ", "bell\x07 and escape\x1b[31m ", "\u202eevil\u202c ", "e\u0301\u200d "]
MARKER = re.compile(r"soak-(?:s\d+-c\d+|replay-\d+)")
STATUS = re.compile(r'class="status-line">(.*?)</div>', re.S)
REPLAYS = 6  # shared replay configurations


@dataclass
class Request:
    kind: str  # generate | race | sweep | invalid
    endpoint: str  # /generate, /race, /sweep
    payload: dict
    marker: Optional[str] = None
    expect: Optional[tuple[str, str]] = None  # invalid: ("exception" | "box" | "raw-error" | "raw-box", regex)
    raw: Optional[dict] = None  # JSON literals sent by raw HTTP (NaN, unpaired surrogates)
    replay: Optional[int] = None
    stop_after_s: Optional[float] = None  # press Stop this long after submitting
    plan: dict = field(default_factory=dict)  # sweep: the drafts, K values and temperatures asked for


def decoding(rng: random.Random) -> dict:
    sampling = rng.random() < 0.5
    return dict(k=rng.randint(1, 8), temperature=round(rng.uniform(0.2, 1.5), 2) if sampling else 0.0,
                top_p=rng.choice([1.0, 0.9, 0.8]), top_k=rng.choice([0, 0, 20, 50]),
                max_new_tokens=rng.choice([8, 16, 24, 32, 48]), seed=rng.randint(0, 2**32 - 1))


def pair_payload(rng: random.Random, marker: str) -> dict:
    prompt = f"# {marker}\n" + (rng.choice(UNICODE) if rng.random() < 0.2 else "") + rng.choice(BASES)
    return dict(prompt=prompt, clean_whitespace=rng.random() < 0.8, target=TARGET, draft=rng.choice(DRAFTS),
                target_custom="", draft_custom="", **decoding(rng))


def replay_payload(index: int) -> dict:
    """The same request every time for a given index, whichever session sends it."""
    rng = random.Random(1000 + index)
    return pair_payload(rng, f"soak-replay-{index}")


def sweep_payload(rng: random.Random, marker: str) -> tuple[dict, dict]:
    drafts = rng.sample(DRAFTS[:3], rng.choice([1, 1, 2]))
    ks = sorted(rng.sample(range(1, 9), rng.randint(1, 3)))
    temps = sorted(rng.sample([0.0, 0.5, 1.0], rng.randint(1, 2)))
    payload = dict(prompt=f"# {marker}\n{rng.choice(BASES)}", clean_whitespace=True, target=TARGET, target_custom="",
                   drafts=drafts, ks=",".join(map(str, ks)), temperatures=", ".join(f"{t:g}" for t in temps),
                   max_new_tokens=rng.choice([8, 16]), seed=rng.randint(0, 1000), top_p=1.0, top_k=0)
    return payload, {"drafts": set(drafts), "ks": set(ks), "temps": set(temps)}


def valid_request(rng: random.Random, session: int, call: int) -> Request:
    marker = f"soak-s{session}-c{call}"
    roll = rng.random()
    if roll < 0.25:
        payload, plan = sweep_payload(rng, marker)
        request = Request("sweep", "/sweep", payload, marker, plan=plan)
    elif roll < 0.5:
        request = Request("race", "/race", pair_payload(rng, marker), marker)
    elif roll < 0.7:
        index = rng.randrange(REPLAYS)
        request = Request("generate", "/generate", replay_payload(index), f"soak-replay-{index}", replay=index)
    else:
        request = Request("generate", "/generate", pair_payload(rng, marker), marker)
    if rng.random() < 0.25:
        request.stop_after_s = rng.uniform(0.1, 2.0)  # after the run starts
    return request


INVALID = [  # (name, endpoint, changes, raw JSON literals, expectation)
    ("k-over-slider", "/generate", {"k": 100}, None, ("exception", r"greater than maximum value 16")),
    ("k-text", "/generate", {"k": "abc"}, None, ("exception", r"expected a finite number, got 'abc'")),
    ("temperature-huge", "/generate", {"temperature": 1e9}, None, ("exception", r"greater than maximum value 2")),
    ("seed-negative", "/generate", {"seed": -5}, None, ("exception", r"less than minimum value 0")),
    ("top-p-zero", "/race", {"top_p": 0.0}, None, ("exception", r"less than minimum value 0.05")),
    ("checkbox-text", "/generate", {"clean_whitespace": "yes"}, None, ("exception", r"expected true or false")),
    ("temperature-nan", "/generate", {}, {"temperature": "NaN"}, ("raw-error", r"expected a finite number, got nan")),
    ("k-infinity", "/generate", {}, {"k": "Infinity"}, ("raw-error", r"expected a finite number, got inf")),
    ("surrogate", "/generate", {}, {"prompt": '"soak \\ud800"'}, ("raw-box", r"unpaired surrogate")),
    ("empty-prompt", "/generate", {"prompt": "   "}, None, ("box", r"prompt is empty")),
    ("unknown-model", "/race", {"target": "lab-targte"}, None, ("box", r"Unknown model 'lab-targte'")),
    ("over-max-new-tokens", "/generate", {"max_new_tokens": 400}, None, ("box", r"Max new tokens must be from 1 to")),
    ("huge-prompt", "/generate", {"prompt": "x" * 9000}, None, ("box", r"this deployment accepts at most")),
    ("local-path", "/generate", {"target_custom": "/etc"}, None, ("box", r"local paths is disabled")),
    ("sweep-huge-k", "/sweep", {"ks": "1-100000000"}, None, ("box", r"K values must lie in \[1, 16\]")),
    ("sweep-too-big", "/sweep", {"ks": "1-16", "temperatures": "0, 0.5, 1, 1.5, 2"}, None,
     ("box", r"This sweep has \d+ points \(.*\); this deployment runs at most 48")),
    ("sweep-nan-temperature", "/sweep", {"temperatures": "nan"}, None, ("box", r"temperature values must lie in")),
]


def invalid_request(rng: random.Random, session: int, call: int) -> Request:
    name, endpoint, changes, raw, expect = rng.choice(INVALID)
    marker = f"soak-s{session}-c{call}"
    base = sweep_payload(rng, marker)[0] if endpoint == "/sweep" else pair_payload(rng, marker)
    return Request(f"invalid:{name}", endpoint, {**base, **changes}, marker, expect=expect, raw=raw)


# --- judging an answer ------------------------------------------------------------------------------------

def flatten(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in flatten(item)]
    if isinstance(value, dict):
        return [value] + [x for item in value.values() for x in flatten(item)]
    return [value]


def texts(outputs) -> str:
    return "\n".join(x for x in flatten(outputs) if isinstance(x, str))


def statuses(outputs) -> list[str]:
    return STATUS.findall(texts(outputs))


def stop_kind(outputs) -> Optional[str]:
    """"budget" when the time budget stopped it, "stopped" when Stop did, else None."""
    lines = " ".join(statuses(outputs))
    if "time limit per run" in lines:
        return "budget"
    return "stopped" if re.search(r"\bStopped\b|\bstopped\b", lines) else None


def json_export(outputs) -> Optional[dict]:
    for item in flatten(outputs):
        if isinstance(item, str) and item.endswith(".json") and Path(item).is_file():
            return json.loads(Path(item).read_text())
    return None


def sweep_rows(outputs) -> list[tuple]:
    for item in flatten(outputs):
        if isinstance(item, dict) and {"headers", "data"} <= set(item) and {"draft", "K", "T"} <= set(item["headers"]):
            h = item["headers"]
            return [(row[h.index("draft")], float(row[h.index("T")]), int(row[h.index("K")])) for row in item["data"]
                    if row and row[h.index("K")] not in (None, "")]
    return []


def judge(request: Request, outputs, stopped_by_us: bool, replays: dict) -> tuple[str, str]:
    """(kind, detail): ok, stopped, budget, or an unexpected kind (error_box, bleed_*, stray_stop, …)."""
    text = texts(outputs)
    if "error-box" in text:
        return "error_box", re.sub(r"<[^>]+>", "", text[text.index("error-box"):])[:200]
    if "Unexpected error" in text:
        return "unexpected_error", text[:200]
    foreign = {m for m in MARKER.findall(text)} - {request.marker}
    if foreign:
        return "bleed_marker", f"shows {sorted(foreign)[:3]}"
    stopped = stop_kind(outputs)
    if stopped == "stopped" and not stopped_by_us:
        return "stray_stop", "stopped without a Stop from this session"
    if request.kind == "sweep":
        return judge_sweep(request, outputs, stopped)
    if request.marker not in text and stopped is None:
        return "missing_output", "own prompt not shown"
    if request.kind == "generate" and stopped is None:
        return judge_export(request, json_export(outputs), replays)
    return stopped or "ok", ""


def judge_sweep(request: Request, outputs, stopped) -> tuple[str, str]:
    rows, plan = sweep_rows(outputs), request.plan
    wrong = [r for r in rows if r[0] not in plan["drafts"] or r[1] not in plan["temps"] or r[2] not in plan["ks"]]
    if wrong:
        return "bleed_plan", f"row {wrong[0]} not in the plan {plan}"
    if not rows and stopped is None:
        return "missing_output", "a finished sweep without rows"
    return stopped or "ok", ""


def judge_export(request: Request, report: Optional[dict], replays: dict) -> tuple[str, str]:
    if report is None:
        return "missing_output", "no JSON export"
    sent, got = request.payload, report.get("settings", {})
    for key in ("seed", "k", "max_new_tokens", "temperature"):
        if float(got.get(key)) != float(sent[key]):
            return "bleed_settings", f"{key}: sent {sent[key]}, export says {got.get(key)}"
    if request.replay is not None:
        first = replays.setdefault(request.replay, report["token_ids"])
        if first != report["token_ids"]:
            return "bleed_replay", f"replay {request.replay} gave different tokens"
    return "ok", ""


def judge_refusal(request: Request, message: str, boxed: bool) -> tuple[str, str]:
    """An invalid request: refused with the expected line, in the expected place."""
    where, pattern = request.expect
    message = html.unescape(re.sub(r"<[^>]+>", "", message))  # the box's text, as a user reads it
    if boxed != where.endswith("box"):
        return "wrong_refusal", f"expected a {where}, got {'a box' if boxed else 'an exception'}: {message[:120]}"
    if not re.search(pattern, message):
        return "wrong_refusal", f"expected /{pattern}/, got: {message[:160]}"
    return "refused", ""
