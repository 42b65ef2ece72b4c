"""Classroom load test: N students press Run on the same exercise at the same moment, against the app as a
Hugging Face Space runs it (SPACE_ID set: the public limits, the default pair preloaded).

    python experiments/load_test.py --students 20
    python experiments/load_test.py --students 30 --example 1

Starts `python app.py` on a free local port with SPACE_ID set (unless --url names a running app on this
machine), waits for the preload as a class would wait for the Space to come up, then opens one gradio_client
per student (each a browser session of its own), lines them up on a barrier and submits Generate with the
example's settings (layout.EXAMPLES: prompt, models, K, temperature, seed, max new tokens) all at once.

Reported per student: time to the first streamed update that shows coloured tokens, time to the measured speedup
(the final update), the figure received, and any error ("Queue is full" included); then the medians and maxima,
how many distinct figures the class received, and whether the targets hold (docs/deploy.md, "A class on one
Space"): zero errors, coloured tokens within --first-token-s for all and a median within --median-first-s,
the measured figure within --measured-s for all, one figure for everyone. Exit status 0 when they do.
soak.py is the long mixed-traffic test; this one is the class's first minute.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

from specdec.paths import REPO_ROOT
from specdec.ui.launch import free_port, wait_until_served
from specdec.ui.layout import EXAMPLE_FIELDS, EXAMPLES

from gradio_client import Client
from measure_ui_latency import wait_for_preload
from soak import LOOPBACK, percentiles

COLOURED = 'class="tok tok-'  # a streamed token in the Generate view (views/render.py)
FIGURE = re.compile(r"Speedup (.+?) \(timed")


def payload(example: int) -> dict:
    """The Generate API's arguments for one of the app's examples (what a student's click on it sends)."""
    values = dict(zip(EXAMPLE_FIELDS, EXAMPLES[example]))
    return dict(prompt=values["prompt"], clean_whitespace=True, target=values["target"], draft=values["draft"],
                target_custom="", draft_custom="", k=values["k"], temperature=values["temperature"], top_p=1.0,
                top_k=0, max_new_tokens=values["max_new_tokens"], seed=values["seed"], k_schedule="constant",
                chat=values["chat"])


def texts(outputs) -> list[str]:
    return [x for x in (outputs or []) if isinstance(x, str)]


def student(index: int, client: Client, request: dict, barrier: threading.Barrier, timeout_s: float,
            records: list) -> None:
    """One student: waits for the others, presses Run, watches the stream until the measured figure."""
    record = {"student": index, "first_tokens_s": None, "measured_s": None, "figure": None, "error": None,
              "status": ""}
    barrier.wait()
    start = time.monotonic()
    try:
        job = client.submit(**request, api_name="/generate")
        seen = 0
        while not job.done() or seen < len(job.outputs()):
            outputs = job.outputs()
            for update in outputs[seen:]:
                if record["first_tokens_s"] is None and any(COLOURED in t for t in texts(update)):
                    record["first_tokens_s"] = time.monotonic() - start
            seen = len(outputs)
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"no measured figure within {timeout_s:.0f} s")
            time.sleep(0.02)
        final = job.result(timeout=5)
        record["measured_s"] = time.monotonic() - start
        status = next((t for t in texts(final) if "Speedup" in t or "Stopped" in t or "error" in t.lower()), "")
        match = FIGURE.search(re.sub(r"<[^>]+>", "", status))
        record["figure"] = match.group(1) if match else None
        record["status"] = re.sub(r"<[^>]+>", " ", status)[:300]
        if record["figure"] is None:
            record["error"] = "no measured figure in the final update: " + record["status"][:160]
    except Exception as exc:  # noqa: BLE001 (every failure is counted and shown)
        record["error"] = f"{type(exc).__name__}: {exc}"[:300]
    records.append(record)


def start_app(log_path: Path, budget_s: float | None) -> tuple[subprocess.Popen, str]:
    """app.py as a Space runs it: SPACE_ID set (public limits), the default pair preloaded."""
    port = free_port()
    flags = ["--port", str(port), "--host", "127.0.0.1"]
    if budget_s is not None:
        flags += ["--run-budget-s", str(budget_s)]
    env = {**os.environ, "SPACE_ID": "specdec/load-test"}
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "app.py"), *flags], cwd=REPO_ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    wait_until_served(url, proc, timeout_s=300)
    wait_for_preload(log_path)
    return proc, url


def summarise(records: list, args) -> dict:
    first = [r["first_tokens_s"] for r in records if r["first_tokens_s"] is not None]
    measured = [r["measured_s"] for r in records if r["figure"] is not None]
    errors = [r for r in records if r["error"]]
    figures = sorted({r["figure"] for r in records if r["figure"]})
    checks = {
        "no errors": not errors,
        "no queue full": not any("queue is full" in (r["error"] or "").lower() for r in records),
        f"everyone saw tokens within {args.first_token_s:g} s": len(first) == len(records)
        and max(first, default=float("inf")) <= args.first_token_s,
        f"median first tokens within {args.median_first_s:g} s": bool(first)
        and statistics.median(first) <= args.median_first_s,
        f"everyone had the measured figure within {args.measured_s:g} s": len(measured) == len(records)
        and max(measured, default=float("inf")) <= args.measured_s,
        "one figure for everyone": len(figures) == 1,
    }
    return {"students": len(records), "errors": len(errors), "error_examples": [r["error"] for r in errors[:5]],
            "first_tokens_s": percentiles(first), "measured_s": percentiles(measured), "figures": figures,
            "checks": checks, "passed": all(checks.values())}


def print_report(report: dict, records: list) -> None:
    for r in sorted(records, key=lambda r: r["student"]):
        first = f"{r['first_tokens_s']:.1f} s" if r["first_tokens_s"] is not None else "never"
        measured = f"{r['measured_s']:.1f} s" if r["measured_s"] is not None else "never"
        print(f"student {r['student']:2d}: coloured tokens after {first}, measured figure after {measured}: "
              f"{r['figure'] or r['error']}")
    for name in ("first_tokens_s", "measured_s"):
        p = report[name]
        if p:
            print(f"{name}: n={p['n']} p50 {p['p50']:.1f} s, p90 {p['p90']:.1f} s, max {p['max']:.1f} s")
    print(f"errors: {report['errors']} {report['error_examples']}")
    print(f"figures received: {report['figures']}")
    for name, ok in report["checks"].items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    print("PASSED" if report["passed"] else "FAILED")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20, help="students pressing Run at once (1-40)")
    parser.add_argument("--example", type=int, default=0, help="which of the app's examples (0: the first screen's)")
    parser.add_argument("--url", default=None, help="a running app on this machine (default: start one)")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per student")
    parser.add_argument("--run-budget-s", type=float, default=None, help="the started app's --run-budget-s")
    parser.add_argument("--first-token-s", type=float, default=15.0)
    parser.add_argument("--median-first-s", type=float, default=5.0)
    parser.add_argument("--measured-s", type=float, default=90.0)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    if not 1 <= args.students <= 40 or not 0 <= args.example < len(EXAMPLES):
        parser.error(f"--students must be 1-40 and --example 0-{len(EXAMPLES) - 1}")
    if args.url and urlparse(args.url).hostname not in LOOPBACK:
        parser.error("--url must point at this machine (127.0.0.1, localhost or ::1)")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    log_path = Path(tempfile.mkdtemp(prefix="load-test-")) / "app.log"
    proc, url = (None, args.url) if args.url else start_app(log_path, args.run_budget_s)
    records: list = []
    try:
        clients = [Client(url, verbose=False) for _ in range(args.students)]  # one browser session each
        barrier = threading.Barrier(args.students)
        request = payload(args.example)
        threads = [threading.Thread(target=student, args=(i, c, request, barrier, args.timeout_s, records),
                                    daemon=True) for i, c in enumerate(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(args.timeout_s + 30)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
    report = summarise(records, args)
    report["server_log"] = str(log_path) if proc else None
    print_report(report, records)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({**report, "records": records}, indent=1))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
