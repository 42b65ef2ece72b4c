"""A load test's figures (specdec/vllm/load.py) as the lab reports them: one row per concurrency and engine, the
speedup per concurrency with its interval, the crossover, the coloured tokens of a few requests of the batch, the
JSON object `python -m specdec load --json` prints, and its CSV. Pure functions over plain data: the shipped
measurement (load_shipped.py) and the app read the same records.
"""
from __future__ import annotations

import csv
import io
from typing import Iterable, Optional

from specdec.engine.events import StepEvent
from specdec.engine.theory import median
from specdec.vllm.fates import build_events
from specdec.vllm.load import ENGINES, Level, LoadSettings, load_test

FORMAT = 1
KIND = "specdec-vllm-load"
METHOD = {
    "clock": "time.perf_counter on the client (monotonic); a loop's makespan runs from the release of its clients to "
             "the last byte of its last answer; TTFT from a request's send to its first streamed token; TPOT: the rest "
             "of the answer over its tokens after the first",
    "tokens": "output tokens only (the prompt's are not counted); every request asks exactly max_new_tokens "
              "(min_tokens = max_tokens, ignore_eos) on both servers, so both count the same tokens",
    "warm_up": "one untimed loop of c requests on each server before each concurrency's timed pairs; an untimed "
               "settle before every timed loop; the reference outputs (each prompt alone on the baseline) before the "
               "first concurrency",
    "pairs": "timed (speculative, baseline) pairs of loops, alternating which goes first; the speedup is the median "
             "of the pairs' tokens/s ratios with its distribution-free 95% interval (specdec/measure/speedup.py)",
    "acceptance": "vLLM's per-request records (--per-request-spec-decode-metrics detailed), pooled over the "
                  "speculative loops' requests: acceptance rate = accepted / drafted; mean acceptance length = 1 + "
                  "accepted / verification steps",
    "same_text": "every timed request's greedy tokens equal its prompt's reference: the prompt alone (concurrency 1) "
                 "on the baseline server",
    "steps": "tokens_per_step: output tokens after the first over the engine steps after the prefill (verification "
             "steps + plain ones, where nothing was drafted); drafted_per_step: drafted tokens over those steps",
}
ROW_FIELDS = ("concurrency", "engine", "output_tokens_per_s", "tpot_ms_p50", "tpot_ms_p95", "ttft_ms_p50", "requests",
              "acceptance_rate", "mean_acceptance_length", "same_text", "same_text_requests")
SAMPLES_PER_LEVEL = 3


def quantile(values: Iterable[float], q: float) -> Optional[float]:
    """The q-quantile, linear between order statistics (numpy's default); None for no values."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    position = q * (len(values) - 1)
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def _ms(seconds: Optional[float]) -> Optional[float]:
    return None if seconds is None else seconds * 1e3


def engine_row(level: Level, engine: str, reference: list[list[int]]) -> dict:
    """One engine at one concurrency, over its timed loops (module docstring of load.py)."""
    loops = level.loops[engine]
    requests = [r for loop in loops for r in loop.requests]
    steps = sum(len(r.per_step_accepted) for r in requests)
    accepted = sum(sum(r.per_step_accepted) for r in requests)
    drafted = sum(sum(r.per_step_drafted) for r in requests)
    same = [r.token_ids == reference[r.prompt] for r in requests]
    decode_steps = sum(decode_steps_of(r) for r in requests)
    return {"concurrency": level.concurrency, "engine": engine,
            "output_tokens_per_s": median(loop.tokens_per_s for loop in loops),
            "tpot_ms_p50": _ms(quantile((r.tpot_s for r in requests), 0.5)),
            "tpot_ms_p95": _ms(quantile((r.tpot_s for r in requests), 0.95)),
            "ttft_ms_p50": _ms(quantile((r.first_token_s for r in requests), 0.5)),
            "requests": len(requests),
            "acceptance_rate": accepted / drafted if drafted else None,
            "mean_acceptance_length": 1 + accepted / steps if steps else None,
            "same_text": all(same) and bool(same), "same_text_requests": sum(same),
            "tokens_per_step": sum(r.tokens - 1 for r in requests) / decode_steps if decode_steps else None,
            "drafted_per_step": drafted / decode_steps if decode_steps else None}


def decode_steps_of(request) -> int:
    """The engine steps a request took after its prefill: vLLM's verification steps and the plain ones between them
    (a step with no draft: ngram found no match), which vLLM's lists leave out. vLLM may count drafts accepted past
    the last token asked for, so the plain steps are what is left, never below 0."""
    spec_tokens = sum(a + 1 for a in request.per_step_accepted)
    return len(request.per_step_accepted) + max(0, request.tokens - 1 - spec_tokens)


def speedup_entry(level: Level) -> dict:
    est = level.estimate
    return {"concurrency": level.concurrency, "speedup": est.ratio, "low": est.low, "high": est.high,
            "repeats": est.repeats, "verdict": est.verdict, "description": est.describe()}


def crossover(speedups: list[dict]) -> Optional[int]:
    """The lowest concurrency whose speedup interval lies at or below 1 (its upper end ≤ 1); None when there is none
    (a concurrency without an interval never counts)."""
    below = [s["concurrency"] for s in speedups if s.get("high") is not None and s["high"] <= 1.0]
    return min(below, default=None)


def fate_sample(level: Level, texts: dict[int, str], count: int = SAMPLES_PER_LEVEL) -> list[dict]:
    """A few requests of the last speculative loop at this concurrency, with what colouring their tokens needs
    (sample_events): ids, each id's text (`texts`), chunk sizes and times, vLLM's per-step lists."""
    loop = level.loops["speculative"][-1]
    return [{"concurrency": level.concurrency, "prompt": r.prompt, "token_ids": r.token_ids,
             "token_texts": [texts.get(t, "") for t in r.token_ids], "chunk_sizes": r.chunk_sizes,
             "chunk_times": r.chunk_times, "per_step_accepted": r.per_step_accepted,
             "per_step_drafted": r.per_step_drafted, "finish_reason": r.finish_reason}
            for r in loop.requests[:count]]


def sample_ids(level: Level, count: int = SAMPLES_PER_LEVEL) -> set[int]:
    """The token ids whose texts fate_sample needs."""
    return {t for r in level.loops["speculative"][-1].requests[:count] for t in r.token_ids}


def sample_events(sample: dict) -> list[StepEvent]:
    """One sampled request's tokens as the lab's StepEvents (accepted drafts, corrections, bonus tokens), from vLLM's
    per-step record: what the Generate view renders."""
    events, _ = build_events(sample["token_ids"], sample["token_texts"], sample["chunk_sizes"], sample["chunk_times"],
                             sample["per_step_accepted"], sample["per_step_drafted"], sample.get("finish_reason"))
    return events


def server_entry(server) -> dict:
    info = server.info
    return {"url": info.url, "model": info.model, "root": info.root, "version": info.version,
            "speculative": info.speculative, "k": info.k, "method": info.method if info.speculative else None,
            "draft": info.draft if info.speculative else None, "dtype": info.dtype, "description": info.describe()}


def report(lead, baseline, settings: LoadSettings, prompt_tokens: list[int], levels: list[Level],
           reference: list[list[int]], samples: list[dict], labels: dict) -> dict:
    """The JSON object of `python -m specdec load --json`."""
    speedups = [speedup_entry(level) for level in levels]
    return {"kind": KIND, "format": FORMAT, **labels,
            "speculative": server_entry(lead), "baseline": server_entry(baseline),
            "settings": {"concurrency": list(settings.concurrencies), "max_new_tokens": settings.max_new_tokens,
                         "rounds": settings.rounds, "pairs": settings.pairs, "settle_s": settings.settle_s,
                         "prompts": len(prompt_tokens), "prompt_tokens": prompt_tokens},
            "method": METHOD,
            "rows": [engine_row(level, engine, reference) for level in levels for engine in ENGINES],
            "speedups": speedups, "crossover": crossover(speedups), "samples": samples}


def machine_label() -> str:
    """This machine as a load run names it: the CPU model and its cores."""
    from specdec.runners.machine_records import available_cores, cpu_model

    return f"{cpu_model()}, {available_cores()} cores"


def measure_reports(lead, baseline, ids: list[list[int]], settings: LoadSettings, labels: dict, hold=None):
    """Generator: the whole load test (load.load_test), yielding (the Level just measured, the report so far) after
    each concurrency; the sampled requests' token texts are asked of the server after the level, untimed. What the
    CLI and the app's "Under load" tab both run."""
    levels, samples = [], []
    for reference, level in load_test(lead, baseline, ids, settings, *([hold] if hold else [])):
        levels.append(level)
        texts = {t: lead.client.detokenize(t) for t in sample_ids(level)}
        samples += fate_sample(level, texts)
        yield level, report(lead, baseline, settings, [len(i) for i in ids], levels, reference, samples, labels)


def method_label(run: dict) -> str:
    """'ngram K=4' / 'draft_model K=3' for a run's speculative server."""
    spec = run["speculative"]
    return f"{spec.get('method') or 'speculative'} K={spec.get('k')}"


def csv_text(runs: list[dict]) -> str:
    """Every run's rows as CSV: its method and K, the row's fields, and the speedup at that concurrency."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["method", "k", *ROW_FIELDS, "speedup", "speedup_low", "speedup_high", "crossover"])
    for run in runs:
        by_c = {s["concurrency"]: s for s in run["speedups"]}
        for row in run["rows"]:
            s = by_c.get(row["concurrency"], {})
            writer.writerow([run["speculative"].get("method"), run["speculative"].get("k"),
                             *[_cell(row.get(f)) for f in ROW_FIELDS],
                             *[_cell(s.get(f)) for f in ("speedup", "low", "high")], _cell(run.get("crossover"))])
    return out.getvalue()


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table_lines(run: dict) -> list[str]:
    """The run as a plain-text table (the CLI without --json)."""
    lines = [f"{method_label(run)} against the baseline, {run['settings']['max_new_tokens']} tokens a request",
             "c\tengine\ttok/s\tTPOT p50 ms\tTPOT p95 ms\tTTFT p50 ms\trequests\tacceptance\tmean acc. length\t"
             "same text\tspeedup (95% interval)"]
    by_c = {s["concurrency"]: s for s in run["speedups"]}
    for row in run["rows"]:
        speedup = by_c[row["concurrency"]]["description"] if row["engine"] == "speculative" else ""
        lines.append("\t".join([str(row["concurrency"]), row["engine"], _cell(row["output_tokens_per_s"]),
                                _cell(row["tpot_ms_p50"]), _cell(row["tpot_ms_p95"]), _cell(row["ttft_ms_p50"]),
                                str(row["requests"]), _cell(row["acceptance_rate"]) or "–",
                                _cell(row["mean_acceptance_length"]) or "–",
                                f"{row['same_text_requests']}/{row['requests']}", speedup]))
    crossover_c = run.get("crossover")
    lines.append(f"crossover: {'none (no interval at or below 1)' if crossover_c is None else f'concurrency {crossover_c}'}")
    return lines
