"""Soak test: N concurrent gradio_client sessions for M minutes against the app on 127.0.0.1.

    python experiments/soak.py --sessions 8 --minutes 10

Starts `python app.py --public` on a free local port (the public deployment's limits, bundled lab
models, no preload) unless --url names a running app (loopback only). Each session mixes Generate,
Race and Sweep with random valid settings, Stop mid-run, and random invalid settings
(experiments/soak_cases.py); it opens a fresh browser session (a new Client) every --calls-per-session
calls. Reported: calls, outcomes and unexpected errors by kind, latency and queue-wait percentiles,
the app's RSS over time (growth after warm-up), cross-session bleed checks, tracebacks in the server
log, and the load average. Exit status 0 when the run passes: no unexpected error, no bleed, no
traceback, RSS growth after warm-up within --max-rss-growth.

Bounded: at most 32 sessions and 120 minutes; every call has a timeout; the app it started is stopped.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlparse

from specdec.paths import REPO_ROOT
from specdec.ui.launch import free_port, wait_until_served

import httpx
import psutil
from gradio_client import Client
from gradio_client.utils import Status
from soak_cases import Request, invalid_request, judge, judge_refusal, valid_request

ROOT = REPO_ROOT
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
EXPECTED = {"ok", "refused", "stopped", "budget"}
STARTED = {Status.PROCESSING, Status.ITERATING, Status.PROGRESS, Status.FINISHED}


class Results:
    """Every call's record, shared by the session threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls: list[dict] = []
        self.replays: dict = {}
        self.examples: dict[str, list[str]] = defaultdict(list)

    def add(self, record: dict) -> None:
        with self.lock:
            self.calls.append(record)
            if record["outcome"] not in EXPECTED and len(self.examples[record["outcome"]]) < 5:
                self.examples[record["outcome"]].append(f"{record['kind']}: {record['detail']}")


def wait_for(job, timeout_s: float, stop_after_s: float | None = None, stop=None) -> tuple[object, float | None]:
    """The job's final outputs and its queue wait (submit -> processing), polling its status; calls
    stop() once, stop_after_s after the job started running (not while it waits in the queue)."""
    submitted, started = time.monotonic(), None
    while not job.done():
        if started is None and job.status().code in STARTED:
            started = time.monotonic()
        if stop_after_s is not None and started is not None and time.monotonic() - started >= stop_after_s:
            stop()
            stop_after_s = None
        if time.monotonic() - submitted > timeout_s:
            raise TimeoutError(f"no answer within {timeout_s:.0f} s")
        time.sleep(0.05)
    started = started or time.monotonic()
    return job.result(timeout=1), started - submitted


def raw_call(client: Client, url: str, request: Request, timeout_s: float) -> tuple[str, str]:
    """POSTs the request with JSON literals the client refuses to encode, every parameter the endpoint
    takes in its order (defaults for those the request does not set); (final event, data)."""
    parameters = client.view_api(print_info=False, return_format="dict")["named_endpoints"][request.endpoint]["parameters"]
    values = {p["parameter_name"]: request.raw.get(p["parameter_name"]) or
              json.dumps(request.payload.get(p["parameter_name"], p["parameter_default"])) for p in parameters}
    call = f"{url.rstrip('/')}/gradio_api/call{request.endpoint}"
    body = '{"data": [%s]}' % ", ".join(values.values())
    event_id = httpx.post(call, content=body, headers={"content-type": "application/json"}, timeout=30).json()["event_id"]
    with httpx.stream("GET", f"{call}/{event_id}", timeout=timeout_s) as stream:
        lines = [line for line in "".join(stream.iter_text()).splitlines() if line.startswith(("event:", "data:"))]
    return lines[-2].removeprefix("event: "), lines[-1].removeprefix("data: ")


def run_valid(client: Client, request: Request, results: Results, timeout_s: float) -> tuple[str, str, float | None]:
    job = client.submit(**request.payload, api_name=request.endpoint)
    pressed = []

    def stop():
        client.predict(api_name="/stop")
        pressed.append(True)

    outputs, wait = wait_for(job, timeout_s, request.stop_after_s, stop)
    kind, detail = judge(request, outputs, bool(pressed), results.replays)
    return kind, detail, wait


def run_invalid(client: Client, url: str, request: Request, timeout_s: float) -> tuple[str, str, float | None]:
    if request.raw is not None:
        event, data = raw_call(client, url, request, timeout_s)
        if event == "error":
            return judge_refusal(request, json.loads(data).get("error") or "", boxed=False) + (None,)
        boxed = [x for x in json.loads(data) if isinstance(x, str) and "error-box" in x]
        return judge_refusal(request, boxed[0] if boxed else data, boxed=bool(boxed)) + (None,)
    try:
        outputs, wait = wait_for(client.submit(**request.payload, api_name=request.endpoint), timeout_s)
    except TimeoutError:
        raise
    except Exception as exc:  # noqa: BLE001 (the refusal we expect for some)
        return judge_refusal(request, str(exc), boxed=False) + (None,)
    boxed = [x for x in outputs if isinstance(x, str) and "error-box" in x]
    return judge_refusal(request, boxed[0] if boxed else "no error shown", boxed=bool(boxed)) + (wait,)


def session_loop(index: int, url: str, deadline: float, args, results: Results) -> None:
    rng, call, client = random.Random(args.seed * 1000 + index), 0, None
    while time.monotonic() < deadline:
        if client is None or call % args.calls_per_session == 0:
            if client is not None:
                client.close()
            client = Client(url, verbose=False)
        call += 1
        invalid = rng.random() < args.invalid_share
        request = (invalid_request if invalid else valid_request)(rng, index, call)
        kind = request.kind + ("+stop" if request.stop_after_s is not None else "")
        start = time.monotonic()
        try:
            if invalid:
                outcome, detail, wait = run_invalid(client, url, request, args.call_timeout)
            else:
                outcome, detail, wait = run_valid(client, request, results, args.call_timeout)
        except TimeoutError as exc:
            outcome, detail, wait = "timeout", str(exc), None
        except Exception as exc:  # noqa: BLE001 (anything a valid request raises is unexpected)
            outcome, detail, wait = "exception", f"{type(exc).__name__}: {exc}"[:200], None
        results.add({"session": index, "call": call, "kind": kind, "endpoint": request.endpoint, "outcome": outcome,
                     "detail": detail, "latency_s": time.monotonic() - start, "queue_wait_s": wait,
                     "t": time.monotonic()})
    if client is not None:
        client.close()


def sample_rss(pid: int, stop: threading.Event, samples: list, every_s: float) -> None:
    process, start = psutil.Process(pid), time.monotonic()
    while not stop.is_set():
        try:
            samples.append((time.monotonic() - start, process.memory_info().rss, os.getloadavg()[0]))
        except psutil.NoSuchProcess:
            return
        stop.wait(every_s)


def percentiles(values: list[float]) -> dict:
    if not values:
        return {}
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(round(q * (len(values) - 1))))]  # noqa: E731
    return {"n": len(values), "p50": pick(0.5), "p90": pick(0.9), "p95": pick(0.95), "p99": pick(0.99),
            "max": values[-1]}


def rss_growth(samples: list, warmup_s: float) -> dict:
    """Median RSS over the minute after warm-up vs over the last minute."""
    if not samples:
        return {}
    end = samples[-1][0]
    after = [rss for t, rss, _ in samples if warmup_s <= t < warmup_s + 60] or [samples[-1][1]]
    last = [rss for t, rss, _ in samples if t >= end - 60]
    warm, final = statistics.median(after), statistics.median(last)
    tail = [(t, rss) for t, rss, _ in samples if t >= warmup_s]
    slope = statistics.linear_regression([t for t, _ in tail], [r for _, r in tail]).slope if len(tail) > 2 else 0.0
    return {"warm_mb": warm / 1e6, "final_mb": final / 1e6, "max_mb": max(s[1] for s in samples) / 1e6,
            "growth": final / warm - 1, "warmup_s": warmup_s, "slope_mb_per_min": slope * 60 / 1e6,
            "per_minute_mb": [round(rss / 1e6, 1) for t, rss, _ in samples if int(t) % 60 < 5]}


def summarise(results: Results, samples: list, log_text: str, args, url: str, elapsed_s: float) -> dict:
    calls = results.calls
    outcomes = Counter(c["outcome"] for c in calls)
    unexpected = {k: v for k, v in outcomes.items() if k not in EXPECTED}
    bleed = {k: v for k, v in unexpected.items() if k.startswith("bleed") or k == "stray_stop"}
    by_endpoint = defaultdict(list)
    for c in calls:
        by_endpoint[c["kind"].split(":")[0]].append(c["latency_s"])
    loads = [load for _, _, load in samples]
    growth = rss_growth(samples, args.warmup_minutes * 60)
    report = {
        "url": url, "sessions": args.sessions, "minutes": args.minutes, "elapsed_s": elapsed_s,
        "calls": len(calls), "calls_by_kind": dict(Counter(c["kind"].split(":")[0] for c in calls)),
        "outcomes": dict(outcomes), "unexpected": unexpected, "unexpected_examples": dict(results.examples),
        "bleed": sum(bleed.values()), "bleed_checks": {"markers_and_plans": sum(outcomes[k] for k in ("ok", "stopped",
                                                                                                       "budget")),
                                                      "replays": len(results.replays)},
        "latency_s": {k: percentiles(v) for k, v in sorted(by_endpoint.items())},
        "queue_wait_s": percentiles([c["queue_wait_s"] for c in calls if c["queue_wait_s"] is not None]),
        "rss": growth, "tracebacks_in_server_log": log_text.count("Traceback"),
        "load_average": {"start": loads[0] if loads else None, "mean": statistics.mean(loads) if loads else None,
                         "max": max(loads, default=None), "cpus": os.cpu_count()},
    }
    report["passed"] = (not unexpected and report["tracebacks_in_server_log"] == 0
                        and (not growth or growth["growth"] <= args.max_rss_growth))
    return report


def print_report(r: dict) -> None:
    print(f"\nsoak: {r['sessions']} sessions x {r['minutes']:g} min against {r['url']} ({r['elapsed_s']:.0f} s)")
    la = r["load_average"]
    if la["mean"] is not None:
        print(f"load average (1 min): start {la['start']:.2f}, mean {la['mean']:.2f}, max {la['max']:.2f} "
              f"on {la['cpus']} CPUs")
    print(f"calls: {r['calls']} {r['calls_by_kind']}")
    print(f"outcomes: {r['outcomes']}")
    print(f"unexpected errors: {sum(r['unexpected'].values())} {r['unexpected']}")
    for kind, examples in r["unexpected_examples"].items():
        for example in examples:
            print(f"  {kind}: {example}")
    print(f"bleed: {r['bleed']} (checked: {r['bleed_checks']['markers_and_plans']} answers for their own marker, "
          f"plan and settings; {r['bleed_checks']['replays']} replay configurations compared across sessions)")
    print("latency s (submit to final answer, queue included):")
    for kind, p in r["latency_s"].items():
        print(f"  {kind:22s} n={p['n']:4d} p50={p['p50']:.2f} p90={p['p90']:.2f} p95={p['p95']:.2f} "
              f"p99={p['p99']:.2f} max={p['max']:.2f}")
    q = r["queue_wait_s"]
    if q:
        print(f"queue wait s: n={q['n']} p50={q['p50']:.2f} p95={q['p95']:.2f} p99={q['p99']:.2f} max={q['max']:.2f}")
    if r["rss"]:
        g = r["rss"]
        print(f"RSS: {g['warm_mb']:.0f} MB after warm-up ({g['warmup_s']:.0f} s), {g['final_mb']:.0f} MB at the end, "
              f"growth {g['growth']:+.1%} ({g['slope_mb_per_min']:+.1f} MB/min after warm-up), max {g['max_mb']:.0f} MB; "
              f"per minute: {g['per_minute_mb']}")
    print(f"tracebacks in the server log: {r['tracebacks_in_server_log']}")
    print("PASSED" if r["passed"] else "FAILED")


def start_app(args, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    flags = ["--host", "127.0.0.1", "--port", str(port), "--no-preload", "--public", "--no-share"]
    if args.run_budget_s is not None:
        flags += ["--run-budget-s", str(args.run_budget_s)]
    if args.sessions_kept is not None:
        flags += ["--sessions", str(args.sessions_kept)]
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), *flags], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    wait_until_served(url, proc)
    return proc, url


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=8, help="concurrent sessions (1-32)")
    parser.add_argument("--minutes", type=float, default=10.0, help="how long (0.1-120)")
    parser.add_argument("--url", default=None, help="a running app on 127.0.0.1 (default: start one)")
    parser.add_argument("--pid", type=int, default=None, help="with --url: the app's process id, for RSS")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--invalid-share", type=float, default=0.3, help="share of invalid requests")
    parser.add_argument("--calls-per-session", type=int, default=10, help="calls before a fresh browser session")
    parser.add_argument("--call-timeout", type=float, default=300.0)
    parser.add_argument("--run-budget-s", type=float, default=20.0, help="the started app's per-run time budget")
    parser.add_argument("--sessions-kept", type=int, default=None, help="the started app's --sessions (default: public)")
    parser.add_argument("--warmup-minutes", type=float, default=None, help="default: a fifth of the run, at most 2")
    parser.add_argument("--max-rss-growth", type=float, default=0.10)
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 32 or not 0.1 <= args.minutes <= 120:
        parser.error("--sessions must be 1-32 and --minutes 0.1-120")
    if args.url and urlparse(args.url).hostname not in LOOPBACK:
        parser.error("--url must point at this machine (127.0.0.1, localhost or ::1)")
    if args.warmup_minutes is None:
        args.warmup_minutes = min(2.0, args.minutes / 5)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    log_path = Path(tempfile.mkdtemp(prefix="soak-")) / "app.log"
    proc, url = (None, args.url) if args.url else start_app(args, log_path)
    pid = proc.pid if proc else args.pid
    results, samples, stop = Results(), [], threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(pid, stop, samples, 5.0), daemon=True) if pid else None
    try:
        if sampler:
            sampler.start()
        started = time.monotonic()
        deadline = started + args.minutes * 60
        threads = [threading.Thread(target=session_loop, args=(i, url, deadline, args, results), daemon=True)
                   for i in range(args.sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(1.0, deadline - time.monotonic()) + args.call_timeout + 30)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
    log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
    report = summarise(results, samples, log_text, args, url, elapsed)
    report["server_log"] = str(log_path) if proc else None
    print_report(report)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({**report, "calls_detail": results.calls}, indent=1))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
