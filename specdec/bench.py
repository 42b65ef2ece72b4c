"""Greedy benchmark, one process, runs interleaved: our target-only baseline, our speculative
decoding, transformers `generate` alone, and transformers assisted generation at the same K.

Every figure is measured here; "engine efficiency" is time inside model forwards / wall time,
with model forwards timed by the same module hooks for all four engines.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch
import transformers

from .decoding import generate
from .events import DecodeSettings

ENGINES = ("ours: target only", "ours: speculative", "ours: spec. + top-5 trace", "transformers: generate",
           "transformers: assisted")
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
class BenchReport:
    target: str
    draft: str
    k: int
    max_new_tokens: int
    repeats: int
    prompt_tokens: int
    device: str
    dtype: str
    threads: int
    runners: dict  # which model-call implementation our engine used for each model
    versions: dict
    engines: list[EngineFigures]
    ours_vs_hf_assisted: float  # our speculative tokens/s over transformers assisted tokens/s
    ours_traced_vs_hf_assisted: float  # the same with the inspector's top-5 trace
    ours_speculative_vs_ours_baseline: float
    hf_assisted_vs_hf_generate: float
    greedy_identical: bool


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


def run_ours(target, draft, ids, k, max_new_tokens, top_n=0):
    start = time.perf_counter()
    result = generate(target, draft, ids, DecodeSettings(max_new_tokens=max_new_tokens, k=k, temperature=0.0),
                      top_n=top_n)
    wall = time.perf_counter() - start
    forwards = result.metrics.target_forwards
    return result.token_ids, wall, forwards, result.metrics.forward_time_s


def run_transformers(target, draft, ids, k, max_new_tokens):
    timers = [ForwardTimer(target.model)] + ([ForwardTimer(draft.model)] if draft is not None else [])
    input_ids = torch.tensor([ids], device=target.device)
    kwargs = dict(
        attention_mask=torch.ones_like(input_ids), do_sample=False, max_new_tokens=max_new_tokens,
        pad_token_id=(target.eos_token_ids or (0,))[0],
    )
    if draft is not None:
        kwargs["assistant_model"] = draft.model
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
    return output[0, len(ids):].tolist(), wall, timers[0].calls, sum(t.time_s for t in timers)


def fix_assistant_length(draft, k: int) -> dict:
    """Make transformers draft exactly K tokens per step (its defaults stop drafts early)."""
    config = draft.model.generation_config
    wanted = dict(num_assistant_tokens=k, num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
    previous = {key: getattr(config, key, None) for key in wanted}
    for key, value in wanted.items():
        setattr(config, key, value)
    return previous


def run_benchmark(target, draft, ids, *, k: int, max_new_tokens: int, repeats: int) -> BenchReport:
    runs = {
        ENGINES[0]: lambda: run_ours(target, None, ids, k, max_new_tokens),
        ENGINES[1]: lambda: run_ours(target, draft, ids, k, max_new_tokens),
        ENGINES[2]: lambda: run_ours(target, draft, ids, k, max_new_tokens, top_n=5),
        ENGINES[3]: lambda: run_transformers(target, None, ids, k, max_new_tokens),
        ENGINES[4]: lambda: run_transformers(target, draft, ids, k, max_new_tokens),
    }
    previous = fix_assistant_length(draft, k)
    try:
        for run in runs.values():  # warm-up, untimed
            run()
        samples = {name: [] for name in runs}
        for _ in range(max(1, repeats)):
            for name, run in runs.items():  # interleaved, so drift hits every engine alike
                samples[name].append(run())
    finally:
        for key, value in previous.items():
            setattr(draft.model.generation_config, key, value)
    figures = [summarize_engine(name, samples[name]) for name in runs]
    speed = {f.engine: f.tokens_per_s for f in figures}
    return BenchReport(
        target=target.name, draft=draft.name, k=k, max_new_tokens=max_new_tokens, repeats=repeats,
        prompt_tokens=len(ids), device=str(target.device), dtype=str(target.dtype).replace("torch.", ""),
        threads=torch.get_num_threads(),
        runners={"target": target.runner_kind, "draft": draft.runner_kind},
        versions={"torch": torch.__version__, "transformers": transformers.__version__},
        engines=figures,
        ours_vs_hf_assisted=speed[ENGINES[1]] / speed[ENGINES[4]],
        ours_traced_vs_hf_assisted=speed[ENGINES[2]] / speed[ENGINES[4]],
        ours_speculative_vs_ours_baseline=speed[ENGINES[1]] / speed[ENGINES[0]],
        hf_assisted_vs_hf_generate=speed[ENGINES[4]] / speed[ENGINES[3]],
        greedy_identical=len({tuple(s[-1][0]) for s in samples.values()}) == 1
        and all(len({tuple(run[0]) for run in s}) == 1 for s in samples.values()),
    )


def summarize_engine(name: str, runs: list[tuple]) -> EngineFigures:
    token_ids = runs[-1][0]
    walls = [wall for _, wall, _, _ in runs]
    return EngineFigures(
        engine=name,
        tokens_per_s=statistics.median(len(ids) / wall for ids, wall, _, _ in runs),
        wall_time_s=statistics.median(walls),
        new_tokens=len(token_ids),
        tokens_per_target_forward=len(token_ids) / max(1, runs[-1][2]),
        engine_efficiency=statistics.median(fwd / wall for _, wall, _, fwd in runs),
        token_ids=token_ids,
    )


def format_table(report: BenchReport) -> str:
    lines = [
        f"target {report.target}  draft {report.draft}  K={report.k}  {report.max_new_tokens} new tokens  "
        f"{report.repeats} repeats  {report.device}/{report.dtype}  {report.threads} threads  "
        f"our runners {report.runners['target']}/{report.runners['draft']}  "
        f"torch {report.versions['torch']}  transformers {report.versions['transformers']}",
        f"{'engine':<28}{'tok/s':>9}{'wall s':>9}{'tokens':>8}{'tok/target fwd':>16}{'efficiency':>12}",
    ]
    for f in report.engines:
        lines.append(
            f"{f.engine:<28}{f.tokens_per_s:>9.1f}{f.wall_time_s:>9.3f}{f.new_tokens:>8}"
            f"{f.tokens_per_target_forward:>16.2f}{f.engine_efficiency:>12.3f}"
        )
    lines += [
        f"ours speculative / transformers assisted: {report.ours_vs_hf_assisted:.2f}x "
        f"({report.ours_traced_vs_hf_assisted:.2f}x with the top-5 trace)",
        f"ours speculative / ours target-only:      {report.ours_speculative_vs_ours_baseline:.2f}x",
        f"transformers assisted / generate:         {report.hf_assisted_vs_hf_generate:.2f}x",
        f"greedy tokens identical across all engines and repeats: {report.greedy_identical}",
    ]
    return "\n".join(lines)
