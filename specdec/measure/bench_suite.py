"""`python -m specdec bench --suite`: the benchmark table of the machine it runs on.

Printed: the CPU model and its vector extensions (machine_records.cpu_model), memory read bandwidth measured here on one
thread and on every core (devices.measure_bandwidth: the sum of a 128 MB tensor, fastest of 4), the path `auto`
chose (tuning.py) or the explicit one, then greedy rows, each timed in interleaved rounds with its median ratio
and 95% interval (bench.run_rounds and bench.compare, the same statistics as `bench` and the app):

  ours target-only      vs transformers `generate`
  each drafter at its auto K (the auto schedule: K up to AUTO_K_MAX chosen step by step from this machine's
  costs, speculation off where it does not pay), or at --k N, vs ours target-only (drafters: --draft a,b,... or
  `auto` and the target's preset list)

A drafter measured slower than target-only (its whole interval below 1) is marked "slower here". The same number
of tokens is timed on both sides of a row (greedy: every engine emits the same tokens; the table says whether
they did).
"""
from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from specdec.errors import first_line
from specdec.measure.bench import HF_GENERATE, OURS_BASE, Comparison, compare, run_ours, run_rounds, run_transformers
from specdec.measure.device_presets import measure_bandwidth
from specdec.measure.speedup import drafter_for_each_run
from specdec.models import presets
from specdec.models.dtypes import dtype_name
from specdec.planning.choice import AUTO, k_and_schedule
from specdec.process import describe_process
from specdec.runners import machine_records, tuning

import torch
import transformers

SUITE_PROMPT = "Explain photosynthesis in simple terms."  # chat-wrapped where the target has a template


@dataclass
class SuiteRow:
    engine: str
    reference: str
    k: Optional[int | str]  # a drafter's K, or auto (the auto schedule); None on the target-only row
    tokens_per_s: float  # median over rounds
    reference_tokens_per_s: float
    tokens_per_target_forward: float
    comparison: Comparison
    identical: bool  # both sides emitted the same tokens in every round
    slower_here: bool  # the interval lies below 1


@dataclass
class SuiteReport:
    cpu: str
    cores: int
    bandwidth_gb_s: dict  # threads -> GB/s of memory read
    path: str  # the measured auto's choice (tuning.summary) or the explicit dtype
    target: str
    device: str
    dtype: str
    prompt_tokens: int
    max_new_tokens: int
    repeats: int
    versions: dict
    omp_wait_policy: str
    rows: list[SuiteRow] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # drafters that could not run here, and why


def bandwidths(device: torch.device) -> dict:
    """GB/s of reading memory on one thread and on every core (the CPU's); one figure off the CPU."""
    if device.type != "cpu":
        return {"device": round(measure_bandwidth(device) / 1e9, 1)}
    before, figures = torch.get_num_threads(), {}
    try:
        for count in sorted({1, machine_records.available_cores()}):
            torch.set_num_threads(count)
            figures[str(count)] = round(measure_bandwidth(device) / 1e9, 1)
    finally:
        torch.set_num_threads(before)
    return figures


def suite_drafters(args) -> list[str]:
    """--draft's list, else `auto` (at --k auto) and the target's preset list."""
    if args.draft and args.draft.strip().lower() != "none":
        return [name.strip() for name in args.draft.split(",") if name.strip()]
    preset = next((p for p in presets.PAIR_PRESETS if p.target == args.target), None)
    drafts = list(preset.drafts) if preset is not None else [presets.ANY_TARGET_DRAFT]
    return ([AUTO] if args.k == AUTO else []) + [d for d in drafts if d != AUTO]


def row(samples: dict, engine: str, reference: str, k: Optional[int | str]) -> SuiteRow:
    found = compare(samples, engine, reference)
    ours, theirs = samples[engine], samples[reference]
    median_rate = lambda runs: statistics.median(len(r.token_ids) / r.wall_s for r in runs)  # noqa: E731
    return SuiteRow(engine, reference, k, median_rate(ours), median_rate(theirs),
                    len(ours[-1].token_ids) / max(1, ours[-1].target_forwards), found,
                    all(a.token_ids == b.token_ids for a, b in zip(ours, theirs)),
                    found.high is not None and found.high < 1.0)


def measure_suite(target, drafters: dict[str, Callable[[], object]], ids: list[int], *, k: int | str,
                  max_new_tokens: int, repeats: int) -> SuiteReport:
    """drafters: {name: load()} (a load that raises is reported as skipped); k: an integer or auto (auto_choice.k_and_schedule)."""
    k_max, schedule = k_and_schedule(k)
    device = target.device
    report = SuiteReport(
        cpu=machine_records.cpu_model(), cores=machine_records.available_cores(), bandwidth_gb_s=bandwidths(device),
        path=tuning.summary(target.tuned) if target.tuned is not None else f"{str(target.dtype)[6:]} (explicit)",
        target=target.name, device=str(device), dtype=dtype_name(target.dtype), prompt_tokens=len(ids),
        max_new_tokens=max_new_tokens, repeats=repeats,
        versions={"torch": torch.__version__, "transformers": transformers.__version__},
        omp_wait_policy=describe_process().get("omp_wait_policy", "unknown"))
    base = lambda: run_ours(target, None, ids, k_max, max_new_tokens)  # noqa: E731
    samples = run_rounds({OURS_BASE: base, HF_GENERATE: lambda: run_transformers(target, ids, max_new_tokens)},
                         repeats)
    report.rows.append(row(samples, OURS_BASE, HF_GENERATE, None))
    for name, load in drafters.items():
        try:
            drafter = load()
        except Exception as exc:  # noqa: BLE001 (a drafter whose weights are missing here: the table says so)
            report.skipped.append(f"{name}: {first_line(exc)}")
            continue
        engine = f"ours: {name}"
        each_run = drafter_for_each_run(drafter)  # a drafter that learns across requests: every run from one snapshot
        run = lambda d=each_run: run_ours(target, d(), ids, k_max, max_new_tokens, k_schedule=schedule)  # noqa: E731
        samples = run_rounds({engine: run, OURS_BASE: base}, repeats)
        report.rows.append(row(samples, engine, OURS_BASE, k))
    return report


def format_suite(report: SuiteReport) -> str:
    bandwidth = ", ".join(f"{gb} GB/s on {n} thread{'s' if n != '1' else ''}" for n, gb in report.bandwidth_gb_s.items())
    lines = [f"CPU: {report.cpu}, {report.cores} cores; memory read {bandwidth} (measured now)",
             f"path: {report.path}; OMP_WAIT_POLICY {report.omp_wait_policy}; torch {report.versions['torch']}, "
             f"transformers {report.versions['transformers']}",
             f"target {report.target} on {report.device}/{report.dtype}; {report.prompt_tokens} prompt tokens, "
             f"{report.max_new_tokens} new tokens, greedy, {report.repeats} interleaved rounds per row",
             "",
             "| engine | vs | K | tok/s | vs tok/s | tokens / target forward | ratio (95% interval) | verdict | same tokens |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report.rows:
        c = r.comparison
        verdict = "slower here" if r.slower_here else (c.verdict or "too few rounds for a verdict")
        lines.append(f"| {r.engine} | {r.reference} | {r.k if r.k is not None else '–'} | {r.tokens_per_s:.1f} | "
                     f"{r.reference_tokens_per_s:.1f} | {r.tokens_per_target_forward:.2f} | {c.description} | "
                     f"{verdict} | {'yes' if r.identical else 'no'} |")
    lines += [f"not run: {reason}" for reason in report.skipped]
    return "\n".join(lines)


def run_suite(args, prompt_ids: Callable) -> int:
    """The CLI's `bench --suite` (specdec/cli/bench.py parses the arguments and passes its prompt_ids(args, target))."""
    from functools import partial

    from specdec.models.loading import load_model
    from specdec.planning.run import load_drafter

    load = partial(load_model, trust_remote_code=args.trust_remote_code)
    target = load(args.target, device=args.device, dtype=args.dtype)
    args.prompt = args.prompt or SUITE_PROMPT
    ids = prompt_ids(args, target)
    drafters = {name: partial(load_drafter, name, target, load_model=load) for name in suite_drafters(args)}
    report = measure_suite(target, drafters, ids, k=args.k, max_new_tokens=args.max_new_tokens, repeats=args.repeats)
    print(format_suite(report))
    if args.json_out:
        with open(args.json_out, "w") as out:
            out.write(json.dumps(asdict(report)) + "\n")
    return 0
