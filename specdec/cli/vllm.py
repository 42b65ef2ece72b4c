"""The CLI's vLLM parts: `python -m specdec vllm serve|stop|sweep|setup` and `generate --engine vllm --vllm-url URL`.

Registered by specdec/cli/main.py (generate.py adds the engine arguments); errors are VllmError (a SpecDecError),
so the CLI prints one line on stderr and exits 2.
"""
from __future__ import annotations

import json
import time

from specdec.cli.shared import err, parse_ids
from specdec.engine.events import DecodeSettings
from specdec.measure.speedup import INTERACTIVE, Policy
from specdec.vllm import engine as vllm_engine
from specdec.vllm.client import VllmError
from specdec.vllm.launcher import (
    METHODS,
    ServeSpec,
    alive,
    check_method,
    record_for,
    records,
    start,
    stop_all,
    wait_healthy,
)
from specdec.vllm.report import acceptance_lines, run_record, server_lines


def add_parser(commands) -> None:
    """`vllm serve`, `vllm stop`, `vllm sweep` and `vllm setup`."""
    vllm = commands.add_parser("vllm", help="start / stop vLLM servers for the lab (docs/vllm.md)")
    sub = vllm.add_subparsers(dest="vllm_command", required=True)
    serve = sub.add_parser("serve", help="start a speculative vLLM server (and --baseline: one without)")
    serve.add_argument("--target", default="smollm2-135m-instruct", help="fetchable name, folder or hub id")
    serve.add_argument("--method", default="ngram", choices=(*METHODS, "none"),
                       help="speculative method (none: only a server without speculation)")
    serve.add_argument("--k", type=int, default=4, help="num_speculative_tokens")
    serve.add_argument("--k-by-batch", default=None, help="dynamic K by batch size (vLLM's "
                       "num_speculative_tokens_per_batch_size), e.g. 1-2:4,3-8:2,9-256:0 (K 0: no drafting there; "
                       "--k is the largest)")
    serve.add_argument("--draft", default=None, help="draft for draft_model/eagle/eagle3: smollm2-135m-draft, "
                       "smollm2-135m-eagle, smollm2-135m-eagle3 (exported from the zoo), a folder or a hub id")
    serve.add_argument("--tensor-parallel-size", type=int, default=1)
    serve.add_argument("--pipeline-parallel-size", type=int, default=1)
    serve.add_argument("--baseline", action="store_true", help="also start the same target without speculation")
    serve.add_argument("--dtype", default="bfloat16", help="bfloat16 (vLLM CPU's usual), float32, float16")
    serve.add_argument("--max-model-len", type=int, default=2048)
    serve.add_argument("--enforce-eager", action="store_true",
                       help="skip vLLM's compiled graph: a faster start, slower decoding (measure with the default)")
    serve.add_argument("--venv", default=None, help="the vLLM venv (default: SPECDEC_VLLM_VENV or "
                       "<model cache>/vllm-venv)")
    serve.add_argument("--detach", action="store_true", help="leave the servers running and return "
                       "(stop them with `python -m specdec vllm stop`)")
    sub.add_parser("stop", help="stop every vLLM server the launcher started")
    sweep = sub.add_parser("sweep", help="one speculative server per draft and K, started one after the other, each "
                           "measured against --baseline-url and stopped (minutes per start on a CPU)")
    sweep.add_argument("--baseline-url", required=True, help="a running server of the target without speculation")
    sweep.add_argument("--drafts", nargs="+", default=["prompt-lookup"], help="prompt-lookup (ngram), "
                       "smollm2-135m-draft (draft_model), smollm2-135m-eagle (eagle), smollm2-135m-eagle3 (eagle3), "
                       "or a draft folder / hub id")
    sweep.add_argument("--ks", default="2,4", help="K values, e.g. 1-4 or 2,4")
    sweep.add_argument("--temperatures", default="0", help="temperatures measured on each server, e.g. 0,0.7")
    sweep.add_argument("--prompt", required=True)
    sweep.add_argument("--no-chat", dest="chat", action="store_false",
                       help="the prompt as is (default: in the chat template)")
    sweep.add_argument("--max-new-tokens", type=int, default=64)
    sweep.add_argument("--pairs", type=int, default=None, help="time exactly this many pairs per point (default: "
                       "the app's Sweep rule)")
    sweep.add_argument("--json", action="store_true", help="print the rows as JSON on stdout")
    sweep.add_argument("--venv", default=None, help="the vLLM venv (default: SPECDEC_VLLM_VENV or "
                       "<model cache>/vllm-venv)")
    setup = sub.add_parser("setup", help="make (or reuse) the vLLM venv and print its python")
    setup.add_argument("--venv", default=None, help="the vLLM venv (default: SPECDEC_VLLM_VENV or "
                       "<model cache>/vllm-venv)")


def add_engine_arguments(gen) -> None:
    """generate's engine choice."""
    gen.add_argument("--engine", default="lab", choices=("lab", "vllm"),
                     help="lab: this project's engine (default); vllm: a running vLLM server (--vllm-url)")
    gen.add_argument("--vllm-url", default=None, help="the speculative vLLM server, e.g. http://127.0.0.1:8000")
    gen.add_argument("--vllm-baseline-url", default=None,
                     help="a vLLM server of the same target without speculation: measures the speedup")
    gen.add_argument("--vllm-model", default=None, help="the served model name to expect (default: the server's)")
    gen.add_argument("--vllm-pairs", type=int, default=None,
                     help="time exactly this many pairs (6 or more for an interval; default: the app's rule)")


def run(args) -> int:
    if args.vllm_command == "stop":
        count = stop_all()
        err(f"Stopped {count} vLLM server{'s' if count != 1 else ''}.")
        return 0
    if args.vllm_command == "sweep":
        return run_sweep(args)
    if args.vllm_command == "setup":
        from pathlib import Path

        from specdec.vllm.venv import ensure_venv

        print(ensure_venv(Path(args.venv).expanduser() if args.venv else None, say=err))
        return 0
    return serve(args)


def serve_specs(args) -> list[ServeSpec]:
    """What to start: the speculative server (unless --method none) and, with --baseline, one without."""
    from specdec.vllm.export import resolve_draft, resolve_target

    if args.k < 1 or args.k > 16:
        raise VllmError("--k must be between 1 and 16")
    target = resolve_target(args.target, say=err)
    common = dict(target=target, name=args.target, dtype=args.dtype, max_model_len=args.max_model_len,
                  enforce_eager=args.enforce_eager,
                  tensor_parallel_size=args.tensor_parallel_size, pipeline_parallel_size=args.pipeline_parallel_size)
    specs = []
    if args.method != "none":
        draft = resolve_draft(args.draft, say=err) if args.draft else None
        specs.append(ServeSpec(method=args.method, k=args.k, draft=draft, k_by_batch=parse_k_by_batch(args.k_by_batch),
                               **common))
    if args.baseline or args.method == "none":
        specs.append(ServeSpec(**common))
    for spec in specs:
        spec.speculative_config()  # refuse a bad method / missing draft before installing anything
    return specs


def parse_k_by_batch(text):
    """'1-2:4,3-8:2,9-256:0' -> ((1, 2, 4), (3, 8, 2), (9, 256, 0)): ranges from 1 on, in order, not overlapping
    (what vLLM requires of num_speculative_tokens_per_batch_size); None for none."""
    if not text:
        return None
    entries = []
    for part in text.split(","):
        try:
            sizes, k = part.split(":")
            first, last = sizes.split("-")
            entries.append((int(first), int(last), int(k)))
        except ValueError:
            raise VllmError(f"--k-by-batch: {part.strip()!r} is not FIRST-LAST:K (e.g. 1-2:4,3-8:2,9-256:0)") from None
    ends = [0] + [last for _, last, _ in entries]
    if entries[0][0] != 1 or any(first != end + 1 or last < first or k < 0
                                 for (first, last, k), end in zip(entries, ends)):
        raise VllmError(f"--k-by-batch {text!r}: the ranges must start at 1 and follow each other (1-2:4,3-8:2,…), "
                        f"each K 0 or more")
    return tuple(entries)


def serve(args) -> int:
    """Starts the servers, prints their URLs and holds them (or leaves them, --detach). Ctrl-C or SIGTERM at any
    moment from the first start on stops every server started so far: the handlers are in place before the first
    server starts, so a signal that comes while the URLs are printed orphans nothing."""
    from pathlib import Path

    from specdec.vllm.venv import ensure_venv

    specs = serve_specs(args)
    python = ensure_venv(Path(args.venv).expanduser() if args.venv else None, say=err)
    for spec in specs:
        check_method(python, spec.method)  # a plugin method (suffix) refused in one line where it cannot run
    _interrupt_on_signals()
    started = []
    try:
        for spec in specs:
            started.append(start(python, spec, say=err))
        wait_healthy(started, say=err)
        _announce(started)
        if args.detach:
            err("Servers left running: `python -m specdec vllm stop` stops them.")
            return 0
        return hold(started)
    except KeyboardInterrupt:
        stop_all(started)
        err("Stopped.")
        return 0
    except BaseException:
        stop_all(started)
        raise


def _announce(started: list[dict]) -> None:
    for record in started:
        kind = "baseline" if record["method"] is None else "speculative"
        print(f"{kind}: {record['url']}", flush=True)
    lead = next((r for r in started if r["method"]), None)
    base = next((r for r in started if not r["method"]), None)
    if lead:
        err(f"Try: python -m specdec generate --engine vllm --vllm-url {lead['url']}"
            + (f" --vllm-baseline-url {base['url']}" if base else "") + ' --prompt "..."')


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _interrupt_on_signals() -> None:
    """SIGINT and SIGTERM both raise KeyboardInterrupt, so the servers are stopped even where SIGINT was ignored
    (a background job)."""
    import signal

    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)


def hold(started: list[dict]) -> int:
    """Keeps the servers until a signal; reports a server that exits on its own (serve() stops the others on
    either way out)."""
    err("Serving; Ctrl-C stops the servers.")
    while all(alive(r["pid"]) for r in started):
        time.sleep(1.0)
    gone = next(r for r in started if not alive(r["pid"]))
    raise VllmError(f"the vLLM server at {gone['url']} exited (log {gone['log']}); stopped the others")


# --- generate --engine vllm -----------------------------------------------------------------------------

def run_generate_vllm(args, settings: DecodeSettings) -> int:
    """Streams one completion from --vllm-url, prints its text (stdout) and its figures (stderr): acceptance
    by position, vLLM's own figures mapped to the lab's, what the server runs and, with --vllm-baseline-url,
    the measured speedup."""
    if not args.vllm_url:
        raise VllmError("--engine vllm needs --vllm-url (a running vLLM server; `python -m specdec vllm serve` "
                        "starts one)")
    if settings.k_schedule != "constant":
        raise VllmError("a vLLM server's K is fixed when it starts: --k-schedule applies to the lab's engine only")
    lead = vllm_engine.connect(args.vllm_url, args.vllm_model, speculative=True, record_for=record_for)
    baseline = (vllm_engine.connect(args.vllm_baseline_url, lead.info.model, speculative=False,
                                    record_for=record_for) if args.vllm_baseline_url else None)
    if baseline is not None:
        vllm_engine.check_same_model(lead, baseline)
    ids = parse_ids(args.prompt_ids) if args.prompt_ids else vllm_engine.encode(lead, args.prompt, chat=args.chat)
    done = vllm_engine.run(lead, ids, settings)
    estimate = None
    if baseline is not None:
        for estimate in vllm_engine.measure_speedup(lead, baseline, ids, settings, policy=pairs_policy(args.vllm_pairs)):
            err(f"measuring: {estimate.describe()}")
    if args.json:
        print(json.dumps(json_report(done, lead, baseline, estimate)))
        return 0
    print(done.result.text)
    for line in server_lines(lead.info, baseline.info if baseline else None) + acceptance_lines(done, estimate):
        err(line)
    return 0


def pairs_policy(pairs, default: Policy = INTERACTIVE):
    """`default` (the app's rule), or exactly `pairs` pairs."""
    if pairs is None:
        return default
    if pairs < 1 or pairs > 200:
        raise VllmError("--vllm-pairs must be between 1 and 200")
    return Policy(min_repeats=pairs, floor_repeats=pairs, max_repeats=pairs, tolerance=0.0, budget_s=0.0,
                  hard_budget_s=0.0)


def run_sweep(args) -> int:
    """`vllm sweep`: specdec/vllm/sweep.py with progress on stderr and one line per point on stdout (--json: the
    rows). Ctrl-C stops the server being started or measured."""
    from dataclasses import asdict
    from pathlib import Path

    from specdec.measure.speedup import SWEEP
    from specdec.measure.sweep import parse_ks, parse_temperatures
    from specdec.vllm.export import resolve_draft
    from specdec.vllm.sweep import describe, settings_for_drafts, sweep
    from specdec.vllm.venv import ensure_venv

    try:
        ks, temps = parse_ks(args.ks), parse_temperatures(args.temperatures)
    except ValueError as exc:
        raise VllmError(str(exc)) from None
    settings = settings_for_drafts(args.drafts, ks, lambda name: resolve_draft(name, say=err))
    baseline = vllm_engine.connect(args.baseline_url, speculative=False, record_for=record_for)
    ids = vllm_engine.encode(baseline, args.prompt, chat=args.chat)
    python = ensure_venv(Path(args.venv).expanduser() if args.venv else None, say=err)
    err(f"Starting {len(settings)} vLLM server(s) one after the other (minutes each on a CPU; Ctrl-C stops).")
    steps, rows = sweep(baseline, settings, ids, DecodeSettings(max_new_tokens=args.max_new_tokens),
                        python, temperatures=temps, policy=pairs_policy(args.pairs, SWEEP)), []
    try:
        for step in steps:
            err(describe(step))
            if step.row is not None:
                rows.append(step.row)
    finally:
        steps.close()  # Ctrl-C: the server being started or measured is stopped
    if args.json:
        print(json.dumps([asdict(r) for r in rows]))
        return 0
    print("draft\tK\tT\tacceptance rate\tα\ttokens per target forward\tspeedup\t95% interval\trepeats")
    for r in rows:
        interval = "–" if r.speedup_low is None else f"{r.speedup_low:.2f}–{r.speedup_high:.2f}"
        print(f"{r.draft}\t{r.k}\t{r.temperature:g}\t{_fmt(r.acceptance_rate)}\t{_fmt(r.alpha_point)}\t"
              f"{_fmt(r.tokens_per_forward)}\t{_fmt(r.speedup)}\t{interval}\t{r.repeats}")
    return 0


def _fmt(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def json_report(done, lead, baseline, estimate) -> dict:
    report = done.result.to_dict()
    counters, rss = vllm_engine.server_counters(lead), vllm_engine.server_rss_bytes(lead)
    report.update(run_record(done, lead, baseline, counters, rss),
                  speedup=estimate.to_dict() if estimate is not None else None)
    return report


__all__ = ["add_engine_arguments", "add_parser", "records", "run", "run_generate_vllm"]
