"""`python -m specdec bench --vs llama.cpp`: the lab and llama.cpp side by side, in one process, interleaved.

Contestants (engines), each timed over the same prompts and token counts in every round:
  - the lab: a LoadedModel (its weights: a GGUF's blocks or the float path) and a drafter (None: target-only) at a
    fixed K, through the engine (planning.run.generate), greedy;
  - llama.cpp's server: one llama-server per speculative configuration (server.py), on the same GGUF file and thread
    count, greedy, the same prompt token ids, exactly as many new tokens (EOS ignored), no prompt cache;
  - llama-bench: llama.cpp's own decoding benchmark (tg<N>: N tokens from an empty context, no prompt, no sampling).
Token counts: the lab's target-only run on each prompt fixes them (it stops at the end of text or --max-new-tokens);
every lab drafter then emits the same tokens (greedy identity) and every llama.cpp run exactly as many.

Rounds: one untimed warm-up, then `repeats` rounds, each running every engine once over every prompt, the order of the
engines rotating from round to round, so that drift on a shared machine hits each alike. An engine's figure in a round
is its tokens over its seconds summed over the prompts; a comparison's figure is the median of the per-round ratios
with a distribution-free 95% interval (measure/speedup.py, the app's statistics). Two rates: end to end (prompt
evaluation included: the lab's wall time, the client's for llama-server) and decoding only (the lab's step times,
the server's predicted_ms; llama-bench's tg is decoding only), each compared with its like.
"""
from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from specdec.engine.events import DecodeSettings
from specdec.measure.speedup import Pair, Timing, estimate
from specdec.planning.run import generate


@dataclass(frozen=True)
class Sample:
    """One engine's run over one prompt: tokens, end-to-end seconds, decoding seconds, tokens per target forward."""

    tokens: int
    seconds: float
    decode_seconds: float
    forwards: Optional[int] = None  # target forwards of the decoding (None: not known)
    token_ids: tuple = ()
    drafting: tuple = (0.0, 0, 0.0)  # the lab's: (seconds drafting, tokens drafted, seconds of the target's side)


class LabEngine:
    """The lab's engine on a loaded target with a drafter (None: target-only) at K."""

    def __init__(self, name: str, target, drafter=None, k: int = 1):
        self.name, self.target, self.drafter, self.k = name, target, drafter, k
        self.weights = target.weights_label
        self.kind = "lab"

    def run(self, prompt_ids: list[int], tokens: int) -> Sample:
        start = time.perf_counter()
        result = generate(self.target, self.drafter, prompt_ids, DecodeSettings(max_new_tokens=tokens, k=self.k))
        seconds = time.perf_counter() - start
        events = result.events
        decode = sum(e.draft_time_s + e.verify_time_s + e.other_time_s for e in events)
        drafting = (sum(e.draft_time_s for e in events), sum(e.k for e in events),
                    sum(e.verify_time_s + e.other_time_s for e in events))
        return Sample(len(result.token_ids), seconds, decode, result.metrics.target_forwards, tuple(result.token_ids),
                      drafting)


class ServerEngine:
    """A running llama-server (server.LlamaServer) with its speculative configuration."""

    def __init__(self, name: str, server, weights: str):
        self.name, self.server, self.weights = name, server, weights
        self.kind = "llama.cpp"

    def run(self, prompt_ids: list[int], tokens: int) -> Sample:
        done = self.server.complete(prompt_ids, tokens)
        decode = float(done.timings.get("predicted_ms", 0.0)) / 1e3 or done.wall_s
        made = len(done.token_ids) or int(done.timings.get("predicted_n", 0))
        return Sample(made, done.wall_s, decode, max(1, made - done.accepted), tuple(done.token_ids))


class BenchEngine:
    """llama-bench's tg<tokens> on a file: one repetition a run (prompt-free: the prompt is ignored)."""

    def __init__(self, name: str, bench: Callable[[int], list[float]], weights: str):
        self.name, self.bench, self.weights = name, bench, weights
        self.kind = "llama-bench"

    def run(self, prompt_ids: list[int], tokens: int) -> Sample:
        rate = statistics.median(self.bench(tokens))
        return Sample(tokens, tokens / rate, tokens / rate, tokens)


@dataclass
class EngineRow:
    engine: str
    kind: str
    weights: str
    tokens_per_s: float  # median over rounds, end to end
    decode_tokens_per_s: float  # median over rounds, decoding only
    low: float  # the range over rounds (end to end)
    high: float
    tokens: int  # per round
    tokens_per_forward: Optional[float]
    c: Optional[float] = None  # the lab's speculative rows: drafting time per drafted token / the lab's target step
    v: Optional[float] = None  # the target's side of a speculative step (verification, bookkeeping) / that step


@dataclass
class ComparisonRow:
    engine: str
    reference: str
    rate: str  # "end to end" | "decoding"
    ratio: Optional[float]
    low: Optional[float]
    high: Optional[float]
    repeats: int
    verdict: Optional[str]
    description: str


@dataclass
class VersusReport:
    machine: str
    threads: int
    prompts: int
    repeats: int
    engines: list[EngineRow]
    comparisons: list[ComparisonRow]
    same_token_counts: bool
    lab_identical: bool  # every lab engine emitted the lab target-only run's tokens on every prompt
    llamacpp_agrees: dict = field(default_factory=dict)  # llama.cpp engine -> share of prompts whose tokens equal the lab's


def run_rounds(engines: list, prompts: list[list[int]], counts: list[int], repeats: int, pause_s: float = 0.05
               ) -> dict[str, list[list[Sample]]]:
    """{engine: [round: [prompt: Sample]]} after one untimed warm-up round (module docstring)."""
    for engine in engines:
        engine.run(prompts[0], counts[0])
    samples = {engine.name: [] for engine in engines}
    for r in range(repeats):
        shift = r % len(engines)
        for engine in engines[shift:] + engines[:shift]:
            samples[engine.name].append([engine.run(ids, n) for ids, n in zip(prompts, counts)])
            time.sleep(pause_s)  # the other engine's threads settle (llama.cpp polls a moment after its work)
    return samples


def round_timing(runs: list[Sample], decoding: bool) -> Timing:
    return Timing(sum(s.tokens for s in runs), sum(s.decode_seconds if decoding else s.seconds for s in runs))


def compare(samples: dict, engine: str, reference: str, decoding: bool) -> ComparisonRow:
    pairs = [Pair(round_timing(a, decoding), round_timing(b, decoding), True)
             for a, b in zip(samples[engine], samples[reference])]
    est = estimate(pairs, state="done")
    return ComparisonRow(engine, reference, "decoding" if decoding else "end to end", est.ratio, est.low, est.high,
                         est.repeats, est.verdict, est.describe())


def engine_row(engine, rounds: list[list[Sample]], step_s: Optional[float] = None) -> EngineRow:
    """An engine's figures over the rounds; step_s: the lab's target-only step on the same weights (median seconds a
    token), which c and v(K) of a lab speculative row are in units of (engine/theory.py's definitions)."""
    rates = [round_timing(runs, False).rate for runs in rounds]
    decode = [round_timing(runs, True).rate for runs in rounds]
    last = rounds[-1]
    forwards = [s.forwards for s in last]
    per_forward = (sum(s.tokens for s in last) / sum(forwards)) if all(forwards) else None
    drafted = sum(s.drafting[1] for runs in rounds for s in runs)
    c = v = None
    if step_s and drafted:
        c = sum(s.drafting[0] for runs in rounds for s in runs) / drafted / step_s
        v = sum(s.drafting[2] for runs in rounds for s in runs) / sum(s.forwards for runs in rounds for s in runs) / step_s
    return EngineRow(engine.name, engine.kind, engine.weights, statistics.median(rates), statistics.median(decode),
                     min(rates), max(rates), sum(s.tokens for s in last), per_forward, c, v)


def run_versus(engines: list, prompts: list[list[int]], counts: list[int],
               comparisons: Callable[[list[EngineRow]], list[tuple[str, str, bool]]], repeats: int, threads: int,
               machine: str = "") -> VersusReport:
    """Times the engines (module docstring) and compares the pairs comparisons(rows) names: (engine, reference,
    decoding only?); given the rows, it may pick each side's fastest configuration."""
    samples = run_rounds(engines, prompts, counts, repeats)
    steps = {e.weights: 1 / engine_row(e, samples[e.name]).decode_tokens_per_s for e in engines
             if e.kind == "lab" and e.drafter is None}
    rows = [engine_row(engine, samples[engine.name], steps.get(engine.weights)) for engine in engines]
    lab = [e for e in engines if e.kind == "lab"]
    reference = [s.token_ids for s in samples[lab[0].name][-1]] if lab else []
    identical = all(s.token_ids == ids for e in lab for runs in samples[e.name] for s, ids in zip(runs, reference))
    agrees = {e.name: sum(s.token_ids == ids for s, ids in zip(samples[e.name][-1], reference)) / len(prompts)
              for e in engines if e.kind == "llama.cpp" and reference}
    same_counts = all(s.tokens == n for e in engines if e.kind != "llama-bench" for runs in samples[e.name]
                      for s, n in zip(runs, counts))
    return VersusReport(machine or describe_machine(), threads, len(prompts), repeats, rows,
                        [compare(samples, a, b, decoding) for a, b, decoding in comparisons(rows)], same_counts,
                        identical,
                        agrees)


def describe_machine() -> str:
    from specdec.llamacpp.build import cpu_model
    from specdec.runners.packed_weights import cpu_flags

    vectors = " ".join(flag for flag in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8") if flag in cpu_flags())
    import os

    return f"{cpu_model()} ({vectors}), {os.cpu_count()} cores, {platform.machine()}"


def format_report(report: VersusReport) -> str:
    lines = [f"machine {report.machine}; {report.threads} threads; {report.prompts} prompt(s); {report.repeats} rounds "
             "interleaved (the order rotating)",
             f"{'engine':<44}{'weights':<30}{'tok/s':>8}{'range':>14}{'decode tok/s':>14}{'tok/fwd':>9}"
             f"{'c':>7}{'v(K)':>7}"]
    for row in report.engines:
        per_forward = f"{row.tokens_per_forward:>9.2f}" if row.tokens_per_forward else f"{'–':>9}"
        theory = f"{row.c:>7.3f}{row.v:>7.2f}" if row.c is not None else ""
        lines.append(f"{row.engine:<44}{row.weights:<30}{row.tokens_per_s:>8.1f}{row.low:>7.1f}–{row.high:<6.1f}"
                     f"{row.decode_tokens_per_s:>14.1f}{per_forward}{theory}")
    width = max((len(f"{c.engine} / {c.reference}") for c in report.comparisons), default=0)
    for c in report.comparisons:
        verdict = f" ({c.verdict})" if c.verdict else ""
        lines.append(f"{c.engine + ' / ' + c.reference:<{width}}  {c.rate:<10}  {c.description}{verdict}")
    lines.append(f"same token counts on every run: {report.same_token_counts}; every lab engine emitted the lab "
                 f"target-only tokens: {report.lab_identical}")
    for name, share in report.llamacpp_agrees.items():
        lines.append(f"{name}: its greedy tokens equal the lab's on {share:.0%} of the prompts (other arithmetic)")
    return "\n".join(lines)
