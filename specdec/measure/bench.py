"""Greedy benchmark, one process, runs interleaved: our engine against transformers on the same model,
dtype, prompt, K and token count, for the drafter asked for:

  no drafter (--draft omitted or none)  ours target-only          vs transformers `generate`
  prompt-lookup                         ours with prompt lookup   vs transformers `generate(prompt_lookup_num_tokens=K)`
  a draft model                         ours speculative          vs transformers assisted generation at a fixed K

(plus each side's own target-only run, so that each engine's speedup over itself is shown too).
Every repeat runs every engine once, the order rotating between repeats so that drift on a shared
machine hits each alike; each comparison is the median of its per-repeat ratios with a 95% interval
from specdec.measure.speedup (the same statistics as the app's speedup). "Engine efficiency" is time
inside model forwards / wall time, with model forwards timed by the same module hooks for every engine.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

from specdec.engine.events import DecodeSettings, MemoryReport
from specdec.engine.metrics import memory_summary
from specdec.errors import InvalidSettingsError
from specdec.measure.speedup import Pair, Timing, estimate
from specdec.models.dtypes import dtype_name
from specdec.planning.run import generate
from specdec.runners.threads import forward_threads

import torch
import transformers

OURS_BASE, OURS_SPEC, OURS_TRACED = "ours: target only", "ours: speculative", "ours: spec. + top-5 trace"
HF_GENERATE, HF_ASSISTED = "transformers: generate", "transformers: assisted"
OURS_PLD, HF_PLD = "ours: prompt lookup", "transformers: prompt lookup"
# Our rows record every step's drafted ids, p(d_i), q(d_i), min(1, p/q), draws and fates; the
# "+ top-5 trace" row also ranks the top 5 alternatives of p and q per position, as the app's inspector does.


@dataclass
class EngineFigures:
    engine: str
    tokens_per_s: float  # median over repeats
    wall_time_s: float  # median
    new_tokens: int
    tokens_per_target_forward: float
    engine_efficiency: float  # median
    token_ids: list[int] = field(repr=False)


@dataclass
class Comparison:
    """engine / reference: the median of the per-repeat tokens/s ratios and its 95% interval."""

    engine: str
    reference: str
    ratio: Optional[float]
    low: Optional[float]
    high: Optional[float]
    repeats: int
    verdict: Optional[str]  # faster | slower | no measurable difference | None (fewer than 6 repeats)
    description: str


@dataclass
class BenchReport:
    target: str
    draft: str  # "none", "prompt-lookup" or the draft model's name
    mode: str  # "target-only", "prompt-lookup" or "draft-model"
    k: int
    max_new_tokens: int
    repeats: int
    prompt_tokens: int
    device: str
    dtype: str
    threads: int  # the count our target's forwards run on (threads.forward_threads; transformers runs on torch's)
    runners: dict  # which model-call implementation our engine used for each model
    versions: dict
    engines: list[EngineFigures]
    comparisons: list[Comparison]
    greedy_identical: bool
    # the headline ratios (medians), kept as plain fields for scripts that read them:
    ours_vs_hf_assisted: Optional[float] = None
    ours_traced_vs_hf_assisted: Optional[float] = None
    ours_speculative_vs_ours_baseline: Optional[float] = None
    hf_assisted_vs_hf_generate: Optional[float] = None
    memory: dict = field(default_factory=dict)  # our engines' MemoryReports, from each one's last timed run
    weights: str = ""  # which weights our target ran (LoadedModel.weights_label: "Q4_1 as published", ...)


class Sample(NamedTuple):
    """One timed run of one engine."""

    token_ids: list[int]
    wall_s: float
    target_forwards: int
    model_s: float  # time inside model forwards
    memory: Optional[MemoryReport]  # ours only (None for transformers' engines)


class ForwardTimer:
    """Counts and times a module's forward calls with hooks (synchronising on CUDA)."""

    def __init__(self, module: torch.nn.Module):
        self.calls, self.time_s, self._start = 0, 0.0, 0.0
        self._sync = torch.cuda.synchronize if next(module.parameters()).is_cuda else (lambda: None)
        self._handles = [module.register_forward_pre_hook(self._before), module.register_forward_hook(self._after)]

    def _before(self, module, args):
        self._sync()
        self._start = time.perf_counter()

    def _after(self, module, args, output):
        self._sync()
        self.time_s += time.perf_counter() - self._start
        self.calls += 1

    def remove(self):
        for handle in self._handles:
            handle.remove()


def run_ours(target, draft, ids, k, max_new_tokens, top_n=0, k_schedule="constant"):
    start = time.perf_counter()
    settings = DecodeSettings(max_new_tokens=max_new_tokens, k=k, temperature=0.0, k_schedule=k_schedule)
    result = generate(target, draft, ids, settings, top_n=top_n)
    wall = time.perf_counter() - start
    m = result.metrics
    return Sample(result.token_ids, wall, m.target_forwards, m.forward_time_s, m.memory)


def run_transformers(target, ids, max_new_tokens, assistant=None, **options):
    """transformers `generate`, greedy; `assistant` (a draft network) or `options`
    (prompt_lookup_num_tokens=…) switch on its speculative modes."""
    timers = [ForwardTimer(target.model)] + ([ForwardTimer(assistant)] if assistant is not None else [])
    input_ids = torch.tensor([ids], device=target.device)
    kwargs = dict(attention_mask=torch.ones_like(input_ids), do_sample=False, max_new_tokens=max_new_tokens,
                  pad_token_id=(target.eos_token_ids or (0,))[0], **options)
    if assistant is not None:
        kwargs["assistant_model"] = assistant
    try:
        with torch.inference_mode():
            start = time.perf_counter()
            output = target.model.generate(input_ids, **kwargs)
            if target.device.type == "cuda":
                torch.cuda.synchronize()
            wall = time.perf_counter() - start
    finally:
        for timer in timers:
            timer.remove()
    return Sample(output[0, len(ids):].tolist(), wall, timers[0].calls, sum(t.time_s for t in timers), None)


def fix_assistant_length(model, k: int) -> dict:
    """Make transformers draft exactly K tokens per step (its defaults stop drafts early)."""
    config = model.generation_config
    wanted = dict(num_assistant_tokens=k, num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
    previous = {key: getattr(config, key, None) for key in wanted}
    for key, value in wanted.items():
        setattr(config, key, value)
    return previous


def drafter_mode(draft) -> str:
    if draft is None:
        return "target-only"
    if getattr(draft, "model", None) is not None:  # a LoadedModel or the draft-model drafter
        return "draft-model"
    if getattr(draft, "name", "") == "prompt-lookup":
        return "prompt-lookup"
    raise InvalidSettingsError(f"bench compares with transformers for no drafter, prompt-lookup or a draft model; "
                     f"{getattr(draft, 'name', draft)!r} has no transformers counterpart")


def plan_engines(target, draft, ids, k: int, max_new_tokens: int) -> tuple[dict[str, Callable], list[tuple]]:
    """{engine name: run()} and the comparisons [(engine, reference)] for this drafter."""
    mode = drafter_mode(draft)
    runs = {OURS_BASE: lambda: run_ours(target, None, ids, k, max_new_tokens),
            HF_GENERATE: lambda: run_transformers(target, ids, max_new_tokens)}
    if mode == "target-only":
        return runs, [(OURS_BASE, HF_GENERATE)]
    if mode == "prompt-lookup":
        ngram = getattr(draft, "max_ngram", 2)
        runs[OURS_PLD] = lambda: run_ours(target, draft, ids, k, max_new_tokens)
        runs[HF_PLD] = lambda: run_transformers(target, ids, max_new_tokens, prompt_lookup_num_tokens=k,
                                                max_matching_ngram_size=ngram)
        return runs, [(OURS_PLD, HF_PLD), (OURS_PLD, OURS_BASE), (HF_PLD, HF_GENERATE), (OURS_BASE, HF_GENERATE)]
    runs = {OURS_BASE: runs[OURS_BASE],
            OURS_SPEC: lambda: run_ours(target, draft, ids, k, max_new_tokens),
            OURS_TRACED: lambda: run_ours(target, draft, ids, k, max_new_tokens, top_n=5),
            HF_GENERATE: runs[HF_GENERATE],
            HF_ASSISTED: lambda: run_transformers(target, ids, max_new_tokens, assistant=draft.model)}
    return runs, [(OURS_SPEC, HF_ASSISTED), (OURS_TRACED, HF_ASSISTED), (OURS_SPEC, OURS_BASE),
                  (HF_ASSISTED, HF_GENERATE), (OURS_BASE, HF_GENERATE)]


def run_rounds(runs: dict[str, Callable[[], Sample]], repeats: int) -> dict[str, list[Sample]]:
    """One untimed warm-up each, then `repeats` rounds of every engine, the order rotating per round."""
    for run in runs.values():
        run()
    names, samples = list(runs), {name: [] for name in runs}
    for r in range(max(1, repeats)):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(runs[name]())
    return samples


def compare(samples: dict[str, list[Sample]], engine: str, reference: str) -> Comparison:
    """Per-round ratio of tokens/s (engine over reference), summarised as in the app."""
    pairs = [Pair(Timing(len(a.token_ids), a.wall_s), Timing(len(b.token_ids), b.wall_s), True)
             for a, b in zip(samples[engine], samples[reference])]
    est = estimate(pairs, state="done")
    return Comparison(engine, reference, est.ratio, est.low, est.high, est.repeats, est.verdict, est.describe())


def run_benchmark(target, draft, ids, *, k: int, max_new_tokens: int, repeats: int) -> BenchReport:
    runs, comparisons = plan_engines(target, draft, ids, k, max_new_tokens)
    mode = drafter_mode(draft)
    previous = fix_assistant_length(draft.model, k) if mode == "draft-model" else {}
    try:
        samples = run_rounds(runs, repeats)
    finally:
        for key, value in previous.items():
            setattr(draft.model.generation_config, key, value)
    found = [compare(samples, engine, reference) for engine, reference in comparisons]
    ratio = {(c.engine, c.reference): c.ratio for c in found}
    return BenchReport(
        target=target.name, draft=getattr(draft, "name", "none") if draft is not None else "none", mode=mode, k=k,
        max_new_tokens=max_new_tokens, repeats=repeats, prompt_tokens=len(ids), device=str(target.device),
        dtype=dtype_name(target.dtype), threads=forward_threads(target.model),
        runners={"target": target.runner_kind, "draft": getattr(draft, "runner_kind", mode)},
        versions={"torch": torch.__version__, "transformers": transformers.__version__},
        engines=[summarize_engine(name, samples[name]) for name in runs],
        comparisons=found,
        greedy_identical=len({tuple(s[-1].token_ids) for s in samples.values()}) == 1
        and all(len({tuple(run.token_ids) for run in s}) == 1 for s in samples.values()),
        ours_vs_hf_assisted=ratio.get((OURS_SPEC, HF_ASSISTED)),
        ours_traced_vs_hf_assisted=ratio.get((OURS_TRACED, HF_ASSISTED)),
        ours_speculative_vs_ours_baseline=ratio.get((OURS_SPEC, OURS_BASE)),
        hf_assisted_vs_hf_generate=ratio.get((HF_ASSISTED, HF_GENERATE)),
        memory={name: samples[name][-1].memory for name in (OURS_BASE, OURS_SPEC, OURS_PLD) if name in samples},
        weights=getattr(target, "weights_label", ""),
    )


def summarize_engine(name: str, runs: list[Sample]) -> EngineFigures:
    token_ids = runs[-1].token_ids
    return EngineFigures(
        engine=name,
        tokens_per_s=statistics.median(len(run.token_ids) / run.wall_s for run in runs),
        wall_time_s=statistics.median(run.wall_s for run in runs),
        new_tokens=len(token_ids),
        tokens_per_target_forward=len(token_ids) / max(1, runs[-1].target_forwards),
        engine_efficiency=statistics.median(run.model_s / run.wall_s for run in runs),
        token_ids=token_ids,
    )


def format_table(report: BenchReport) -> str:
    lines = [
        f"target {report.target}  draft {report.draft}  K={report.k}  {report.max_new_tokens} new tokens  "
        f"{report.repeats} repeats  {report.device}/{report.dtype}  our forwards on {report.threads} thread{'s' if report.threads != 1 else ''}  "
        f"our runners {report.runners['target']}/{report.runners['draft']}  "
        f"{'our target weights ' + report.weights + '  ' if report.weights else ''}"
        f"torch {report.versions['torch']}  transformers {report.versions['transformers']}",
        f"{'engine':<30}{'tok/s':>9}{'wall s':>9}{'tokens':>8}{'tok/target fwd':>16}{'efficiency':>12}",
    ]
    for f in report.engines:
        lines.append(
            f"{f.engine:<30}{f.tokens_per_s:>9.1f}{f.wall_time_s:>9.3f}{f.new_tokens:>8}"
            f"{f.tokens_per_target_forward:>16.2f}{f.engine_efficiency:>12.3f}"
        )
    width = max(len(f"{c.engine} / {c.reference}") for c in report.comparisons)
    for c in report.comparisons:
        verdict = f" ({c.verdict})" if c.verdict else ""
        lines.append(f"{c.engine + ' / ' + c.reference:<{width}}  {c.description}{verdict}")
    lines.append(f"greedy tokens identical across all engines and repeats: {report.greedy_identical}")
    lines += [f"{name}: {memory_summary(memory)}" for name, memory in report.memory.items()]
    return "\n".join(lines)
