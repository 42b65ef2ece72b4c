"""`python -m specdec load`: speculation under load, a speculative vLLM server against a baseline server of the same
target at each concurrency (specdec/vllm/load.py has the method; docs/vllm.md, "Under load").

    python -m specdec load --vllm-url URL --vllm-baseline-url URL --concurrency 1,2,4,8,16,32 \\
        --prompts-file assets/measurements/load-prompts.json --max-new-tokens 48 --json

Progress goes to stderr, one line per concurrency; stdout carries the table, or with --json one object (rows,
speedups, crossover, samples, labels). --lock-file PATH holds an exclusive flock on PATH while each concurrency is
measured (a machine shared with other measurements: each hold is one level, both servers interleaved inside it).
Both servers must be on this machine: a load test sends hundreds of requests.
"""
from __future__ import annotations

import fcntl
import json
import shlex
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from specdec.cli.generate import read_prompts
from specdec.cli.shared import UsageError, err
from specdec.vllm import engine as vllm_engine
from specdec.vllm.client import VllmError
from specdec.vllm.load import LoadSettings, off_this_machine, parse_concurrencies
from specdec.vllm.load_report import machine_label, measure_reports, table_lines

LIMITS = {"--max-new-tokens": (2, 1024), "--pairs": (1, 50), "--rounds": (1, 20)}


def add_parser(commands) -> None:
    load = commands.add_parser("load", help="speculation under load: a speculative vLLM server against a baseline "
                               "server at each concurrency (docs/vllm.md)")
    load.add_argument("--vllm-url", required=True, help="the speculative vLLM server (on this machine)")
    load.add_argument("--vllm-baseline-url", required=True, help="the same target without speculation")
    load.add_argument("--concurrency", default="1,2,4,8,16,32", help="clients at once, e.g. 1,2,4,8,16,32")
    load.add_argument("--prompts-file", required=True, help="prompts: one a line, or a JSON list of strings")
    load.add_argument("--no-chat", dest="chat", action="store_false",
                      help="the prompts as they are (default: in the served model's chat template)")
    load.add_argument("--max-new-tokens", type=int, default=48, help="output tokens of every request")
    load.add_argument("--rounds", type=int, default=2, help="requests per client in one loop")
    load.add_argument("--pairs", type=int, default=6, help="timed (speculative, baseline) pairs per concurrency")
    load.add_argument("--settle-s", type=float, default=1.5, help="untimed seconds before each timed loop")
    load.add_argument("--lock-file", default=None, help="hold an exclusive flock on this file while each "
                      "concurrency is measured (several levels in one hold while --hold-s allows)")
    load.add_argument("--hold-s", type=float, default=540.0, help="the longest hold of --lock-file, as far as "
                      "the levels' times predict (default 540)")
    load.add_argument("--out", default=None, help="also write the JSON object to this file")
    load.add_argument("--json", action="store_true", help="print one JSON object")


def check_args(args) -> LoadSettings:
    """Every argument checked before a server is contacted: one line each."""
    for flag, (low, high) in LIMITS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if not low <= value <= high:
            raise UsageError(f"{flag} must be between {low} and {high}, got {value}")
    if not 0 <= args.settle_s <= 30:
        raise UsageError(f"--settle-s must be between 0 and 30, got {args.settle_s:g}")
    if not 0 <= args.hold_s <= 3600:
        raise UsageError(f"--hold-s must be between 0 and 3600, got {args.hold_s:g}")
    for flag, url in (("--vllm-url", args.vllm_url), ("--vllm-baseline-url", args.vllm_baseline_url)):
        if off_this_machine(url):
            raise UsageError(f"{flag} {url} is not on this machine: a load test sends hundreds of requests, so it "
                             f"runs only against 127.0.0.1, localhost or ::1")
    return LoadSettings(parse_concurrencies(args.concurrency), args.max_new_tokens, args.rounds, args.pairs,
                        args.settle_s)


class LevelLock:
    """An exclusive flock on `path` around each concurrency level, kept into the next level while the hold so far
    plus 1.5 times the last level's time stays within `hold_s` (a long run then takes the lock a few times, each hold
    under hold_s as far as the levels' times predict one another), released otherwise and at the end."""

    def __init__(self, path, hold_s: float):
        self.path, self.hold_s, self.handle, self.since = path, hold_s, None, 0.0

    @contextmanager
    def level(self):
        if self.path is None:
            yield
            return
        if self.handle is None:
            self.handle = open(self.path, "a")
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                err(f"waiting for the lock on {self.path}…")
                fcntl.flock(self.handle, fcntl.LOCK_EX)
            self.since = time.monotonic()
        started = time.monotonic()
        try:
            yield
        except BaseException:
            self.release()
            raise
        now = time.monotonic()
        if now - self.since + 1.5 * (now - started) > self.hold_s:
            self.release()

    def release(self) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None


def command_line(args) -> str:
    """The command as it can be typed again."""
    words = ["python", "-m", "specdec", "load", "--vllm-url", args.vllm_url, "--vllm-baseline-url",
             args.vllm_baseline_url, "--concurrency", args.concurrency, "--prompts-file", args.prompts_file,
             "--max-new-tokens", str(args.max_new_tokens), "--rounds", str(args.rounds), "--pairs", str(args.pairs),
             "--settle-s", f"{args.settle_s:g}"]
    words += [] if args.chat else ["--no-chat"]
    words += ["--lock-file", args.lock_file, "--hold-s", f"{args.hold_s:g}"] if args.lock_file else []
    return shlex.join(words + (["--json"] if args.json else []))


def write_out(path, result: dict) -> None:
    if path:
        try:
            Path(path).write_text(json.dumps(result, indent=1) + "\n")
        except OSError as exc:
            raise VllmError(f"--out: cannot write {path}: {exc.strerror or exc}") from None


def run(args) -> int:
    settings = check_args(args)
    prompts = read_prompts(args.prompts_file)
    lead = vllm_engine.connect(args.vllm_url, speculative=True)
    baseline = vllm_engine.connect(args.vllm_baseline_url, lead.info.model, speculative=False)
    vllm_engine.check_same_model(lead, baseline)
    ids = [vllm_engine.encode(lead, p, chat=args.chat) for p in prompts]
    labels = {"machine": machine_label(), "command": command_line(args),
              "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    err(f"Load test: {lead.info.describe()} against {baseline.info.url}; {len(prompts)} prompts, "
        f"{settings.max_new_tokens} tokens a request, concurrency {', '.join(map(str, settings.concurrencies))}.")
    started, lock = time.monotonic(), LevelLock(args.lock_file, args.hold_s)
    try:
        for level, result in measure_reports(lead, baseline, ids, settings, labels, lock.level):
            est = level.estimate
            err(f"concurrency {level.concurrency}: {est.describe()}; speculative {est.lead_tokens_per_s:.1f} tok/s, "
                f"baseline {est.follow_tokens_per_s:.1f} tok/s ({time.monotonic() - started:.0f} s)")
            write_out(args.out, result)  # after every level: a long run interrupted keeps what it measured
    finally:
        lock.release()
    if args.json:
        print(json.dumps(result))
    else:
        print("\n".join(table_lines(result)))
    return 0
