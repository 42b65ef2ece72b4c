"""The measured `auto`: which exact path (dtype, kernels and thread count) runs a model fastest on this machine.

CPU flags do not predict it: the fastest path on one of this project's CPUs is among the slowest on another
(docs/engine.md, "CPU", has the measurements). So at the first CPU load of a model with dtype `auto` for a key
(machine_records.py: the model's shape, the device, the CPU model and its vector extensions, the torch version, the
OpenMP wait policy in force, the cores, whether the lab's kernels build here), every candidate path is timed and the
fastest that keeps greedy identity is chosen and cached, with its figures, in the model cache folder
(SPECDEC_CACHE, default ~/.cache/specdec: tuning.json). `python -m specdec tune` shows and re-measures it.

Candidates: float32 (through float16 weight copies where the weights are float16 values: packed_weights.py),
float32 on the lab's kernels where they build and fit (lab_kernel_runner.py: float16 weights, row-exact), on a
CPU that computes bfloat16 natively and for models of at least loading.BF16_MIN_PARAMS parameters, bfloat16
(oneDNN-packed), and for a model carried as a GGUF file its own blocks (q4_1, q8_0: block_model.py; other numbers than
float32's, so held to row-exactness and their own identity, not float32's tokens); each on one thread and every
core. Not candidates: float16 activations (CPU kernels are slow and not row-exact), float32 without the copies
(SPECDEC_PACKED_WEIGHTS is process-wide).

Each candidate, on a fixed CONTEXT-token prefix: the median of REPEATS one-token forwards (a decoding step), of
REPEATS (K + 1)-token forwards (a verification at PROBE_K) and of REPEATS WIDE_ROWS-token forwards (a long chain
or a tree), after one warm-up round, through the engine's own
runner and thread handling (threads.set_model_threads); the candidates take turns, round by round, so that load
from other processes hits each alike. Identity probe: PROBE_TOKENS greedy tokens decoded one
at a time, then the same tokens scored in one forward; a candidate is excluded when a greedy token of the batched
forward differs from the one-token forwards' (speculation would then not reproduce target-only decoding), or
when its greedy tokens differ from float32's on the first thread count (the reference), or for bfloat16 when
the batched rows differ in any bit (bfloat16 near-ties are common: only row-exact products are trusted). The
choice minimises step + verification time (a target-only run is all steps, a speculative run's target side is
verifications); a later candidate must beat an earlier one by MARGIN (5%) to be chosen over it. Then, for the
chosen dtype and kernels, each row bucket of threads.ROW_BUCKETS gets the thread count fastest for its forwards
(the same MARGIN rule): a one-token step is bound by memory and a verification by compute, so they may differ
(threads_by_rows). An explicit dtype or thread count always wins.
"""
from __future__ import annotations

import copy
import os
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from specdec import config
from specdec.models.dtypes import BF16_MIN_PARAMS, BLOCK_FORMATS, block_weights_label, dtype_name
from specdec.runners import lab_kernels as lab_kernel_runner
from specdec.runners import packed_weights, threads
from specdec.runners.machine_records import available_cores, cached_record, records_file, tuning_key, write_record

import torch

FILE_NAME = "tuning.json"
FORMAT = 5  # bumped when the candidates or the choice rule change: older records are measured again
CONTEXT = 48  # prefix tokens before every timed forward
PROBE_K = 4  # the verification timed is K + 1 tokens
PROBE_TOKENS = 8  # greedy tokens of the identity probe (>= PROBE_K + 1)
WIDE_ROWS = 9  # a forward of the 6-17 row bucket (the probe has PROBE_TOKENS + 1 tokens to score)
REPEATS = 5


@dataclass
class CandidateFigures:
    dtype: str
    threads: int
    runner: str = ""  # the runner label (float16 weight copies, oneDNN-packed bfloat16 weights, ...)
    step_ms: Optional[float] = None  # median one-token forward
    verify_ms: Optional[float] = None  # median (PROBE_K + 1)-token forward
    wide_ms: Optional[float] = None  # median WIDE_ROWS-token forward
    identical: bool = False  # kept greedy identity on the probe
    rows_exact: bool = False  # batched rows equal one-token rows in every bit
    excluded: str = ""  # why it may not be chosen ("" when it may)
    kernels: str = "torch"  # "torch": torch's CPU kernels; "lab": the lab's (lab_kernel_runner.py)

    @property
    def cost_ms(self) -> Optional[float]:
        return None if self.step_ms is None or self.verify_ms is None else self.step_ms + self.verify_ms

    @property
    def label(self) -> str:
        lab, what = ", lab kernels" if self.kernels == "lab" else "", block_weights_label(self.dtype) \
            if self.dtype in BLOCK_FORMATS else self.dtype
        return f"{what}{lab}, {self.threads} thread{'s' if self.threads != 1 else ''}"


@dataclass
class TunedPath:
    key: dict
    dtype: str
    threads: int
    why: str
    candidates: list[CandidateFigures] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # candidates not measured, and why
    measured_s: float = 0.0
    measured_at: str = ""
    kernels: str = "torch"  # the chosen candidate's kernels
    threads_by_rows: dict = field(default_factory=dict)  # row bucket name -> thread count (threads.ROW_BUCKETS)

    @property
    def chosen(self) -> Optional[CandidateFigures]:
        wanted = (self.dtype, self.threads, self.kernels)
        return next((c for c in self.candidates if (c.dtype, c.threads, c.kernels) == wanted), None)

    @property
    def label(self) -> str:
        """'float32, lab kernels, 2 threads': the chosen path in words."""
        return CandidateFigures(self.dtype, self.threads, kernels=self.kernels).label

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TunedPath":
        data = dict(data)
        data["candidates"] = [CandidateFigures(**c) for c in data.get("candidates", [])]
        return cls(**data)


# --- the cache file (machine_records.py): tuning.json --------------------------------------------------------

def cached_path(key: dict) -> Optional[TunedPath]:
    record = cached_record(key, FILE_NAME, FORMAT)
    try:
        return TunedPath.from_dict(record) if record else None
    except (TypeError, KeyError):  # a record of an older layout: measured again
        return None


def store(path: TunedPath) -> None:
    write_record(path.key, path.to_dict(), FILE_NAME, FORMAT)


def cache_file() -> Path:
    """Where the tuned paths are kept."""
    return records_file(FILE_NAME)


# --- the choice ----------------------------------------------------------------------------------------------

MARGIN = 0.05  # a later candidate must be this much faster than an earlier one to be chosen over it


def earliest_within_margin(items: list, cost: Callable):
    """The first of `items` whose cost is within MARGIN of the lowest (items come simplest first)."""
    lowest = min(cost(item) for item in items)
    return next(item for item in items if cost(item) <= lowest * (1 + MARGIN))


def choose(candidates: list[CandidateFigures]) -> tuple[CandidateFigures, str]:
    """The earliest candidate that may be chosen whose step + verification time is within MARGIN of the fastest
    one's (on a shared machine timings move by more than that between runs: a closer race is no reason to leave
    the simpler path), and why."""
    allowed = [c for c in candidates if not c.excluded and c.cost_ms is not None]
    if not allowed:
        reference = candidates[0]
        return reference, "no candidate kept greedy identity on the probe: float32 on the first thread count, the reference"
    fastest = min(allowed, key=lambda c: c.cost_ms)
    best = earliest_within_margin(allowed, lambda c: c.cost_ms)
    why = f"fastest exact path: step {best.step_ms:.2f} ms + verification of {PROBE_K + 1} {best.verify_ms:.2f} ms"
    if best is not fastest:
        why = (f"within {MARGIN:.0%} of the fastest ({fastest.label}, {fastest.cost_ms:.2f} ms), so the earlier "
               f"candidate: step {best.step_ms:.2f} ms + verification of {PROBE_K + 1} {best.verify_ms:.2f} ms")
    others = [c for c in allowed if c is not best]
    if others and best is fastest:
        runner_up = min(others, key=lambda c: c.cost_ms)
        why += f" (next: {runner_up.label}, {runner_up.cost_ms:.2f} ms)"
    return best, why


# --- measuring -----------------------------------------------------------------------------------------------

def thread_candidates() -> list[int]:
    explicit = threads.explicit_threads() if threads.has_explicit_threads() else None
    return [explicit] if explicit else sorted({1, available_cores()})


def probe_ids(vocab: int) -> list[int]:
    """A fixed prefix of ordinary token ids (their values do not change the cost)."""
    return [(17 * i + 3) % max(2, vocab - 1) + 1 for i in range(CONTEXT)]


@dataclass
class _Trial:
    """One candidate being measured: its model, thread count, runner, probe tokens and timings so far."""

    loaded: object
    figures: CandidateFigures
    runner: object
    tokens: list[int]
    step: list[float] = field(default_factory=list)
    verify: list[float] = field(default_factory=list)
    wide: list[float] = field(default_factory=list)

    def timed_ms(self, ids: list[int]) -> float:
        threads.set_model_threads(self.loaded.model, self.figures.threads)
        start = time.perf_counter()
        self.runner.forward(ids)
        elapsed = time.perf_counter() - start
        self.runner.rollback(CONTEXT)
        return elapsed * 1e3


def probe_candidate(loaded, thread_count: int, reference: Optional[list[int]]) -> _Trial:
    """The identity probe of one path (the model's forwards on thread_count threads), leaving its runner at the
    CONTEXT-token prefix for timing."""
    threads.set_model_threads(loaded.model, thread_count)
    runner = loaded.new_runner(loaded.real_vocab_size, CONTEXT + PROBE_TOKENS + 2)
    figures = CandidateFigures(getattr(loaded, "weights", "") or dtype_name(loaded.dtype), thread_count,
                               loaded.runner_kind, kernels=loaded.kernels)
    token = int(runner.prefill(probe_ids(loaded.real_vocab_size)).argmax())
    tokens, rows = [token], []
    for _ in range(PROBE_TOKENS):
        rows.append(runner.forward([tokens[-1]])[-1])
        tokens.append(int(rows[-1].argmax()))
    runner.rollback(CONTEXT)
    batched = runner.forward(tokens[:PROBE_TOKENS])
    runner.rollback(CONTEXT)
    figures.rows_exact = bool(torch.equal(batched, torch.stack(rows)))
    figures.identical = [int(t) for t in batched.argmax(dim=-1)] == tokens[1:]
    figures.excluded = exclusion(figures, tokens, reference)
    return _Trial(loaded, figures, runner, tokens)


def time_interleaved(trials: list[_Trial], repeats: int = REPEATS) -> None:
    """Rounds of one step and one verification of every candidate in turn (the order rotating), so that load
    from other processes hits each alike; the first round warms up; each figure is the median of the rest."""
    for index in range(repeats + 1):
        shift = index % len(trials)
        for trial in trials[shift:] + trials[:shift]:
            step, verify = trial.timed_ms(trial.tokens[:1]), trial.timed_ms(trial.tokens[:PROBE_K + 1])
            wide = trial.timed_ms(trial.tokens[:WIDE_ROWS])
            if index:
                trial.step.append(step)
                trial.verify.append(verify)
                trial.wide.append(wide)
    for trial in trials:
        trial.figures.step_ms, trial.figures.verify_ms = statistics.median(trial.step), statistics.median(trial.verify)
        trial.figures.wide_ms = statistics.median(trial.wide)


# the timing that stands for each row bucket (threads.ROW_BUCKETS, in order): a step, a verification, a wide forward
BUCKET_FIGURES = dict(zip((name for name, _, _ in threads.ROW_BUCKETS), ("step_ms", "verify_ms", "wide_ms"),
                          strict=True))


def threads_by_rows(best: CandidateFigures, candidates: list[CandidateFigures]) -> dict:
    """Per row bucket, the thread count whose forwards of the chosen dtype and kernels were fastest there (the
    fewest threads within MARGIN of the fastest: candidates come in increasing thread counts)."""
    siblings = [c for c in candidates if (c.dtype, c.kernels) == (best.dtype, best.kernels) and not c.excluded]
    counts = {}
    for bucket, figure in BUCKET_FIGURES.items():
        timed = [c for c in siblings if getattr(c, figure) is not None]
        if timed:
            counts[bucket] = earliest_within_margin(timed, lambda c, figure=figure: getattr(c, figure)).threads
    return counts


def exclusion(figures: CandidateFigures, tokens: list[int], reference: Optional[list[int]]) -> str:
    if not figures.identical:
        return "a batched verification chose other greedy tokens than one-token steps"
    if reference is not None and tokens != reference and figures.dtype not in BLOCK_FORMATS:
        return "its greedy tokens differ from float32's"
    if figures.dtype != "float32" and not figures.rows_exact:
        return "its batched rows differ from one-token rows (products not row-exact here)"
    return ""


def bf16_reason(parameters: int) -> str:
    """'' when bfloat16 is a candidate for a model of this size on this CPU, else why not."""
    if not packed_weights.cpu_has_native_bf16():
        return "bfloat16: this CPU has no native bfloat16 products (avx512_bf16 / amx_bf16)"
    if parameters < BF16_MIN_PARAMS:
        return f"bfloat16: models under {BF16_MIN_PARAMS / 1e6:.0f}M parameters stay float32 ({parameters / 1e6:.1f}M)"
    return ""


def measure_paths(loaded_float32, key: dict, repeats: int = REPEATS, blocks: Optional[dict] = None) -> TunedPath:
    """Probes, times and chooses among every path of a float32-loaded model (bf16: a copy; blocks: tuned_path's)."""
    started = time.perf_counter()
    parameters = sum(p.numel() for p in loaded_float32.model.parameters())
    before, before_rows = threads.model_threads(loaded_float32.model), threads.row_threads(loaded_float32.model)
    threads.set_row_threads(loaded_float32.model, None)  # each trial's forwards on its own count
    skipped = []
    try:
        with torch.inference_mode():
            on_torch = replace(loaded_float32, kernels="torch")  # whatever an earlier choice set on the shared model
            trials = [probe_candidate(on_torch, count, None) for count in thread_candidates()[:1]]
            reference = trials[0].tokens
            trials += [probe_candidate(on_torch, count, reference) for count in thread_candidates()[1:]]
            reason = lab_kernel_runner.fits(loaded_float32.model)
            if reason:
                skipped.append(reason)
            else:
                on_lab = replace(loaded_float32, kernels="lab")
                trials += [probe_candidate(on_lab, count, reference) for count in thread_candidates()]
            reason = bf16_reason(parameters)
            if reason:
                skipped.append(reason)
            else:
                as_bf16 = bfloat16_copy(loaded_float32)
                trials += [probe_candidate(as_bf16, count, reference) for count in thread_candidates()]
            trials += [probe_candidate(load(), count, None)  # a block model: load() gives the one cached model
                       for load in (blocks or {}).values() for count in thread_candidates()]
            time_interleaved(trials, repeats)
    finally:
        threads.set_model_threads(loaded_float32.model, before)
        threads.set_row_threads(loaded_float32.model, before_rows)
    candidates = [trial.figures for trial in trials]
    best, why = choose(candidates)
    del trials  # their runners; then the weight copies of the kernels not chosen go too
    if best.kernels == "lab" or best.dtype in BLOCK_FORMATS:  # a block path chosen: no float copy is needed
        packed_weights.forget_copies(loaded_float32.model)
    if best.kernels != "lab" or best.dtype in BLOCK_FORMATS:
        lab_kernel_runner.forget(loaded_float32.model)
    return TunedPath(key, best.dtype, best.threads, why, candidates, skipped,
                     round(time.perf_counter() - started, 2), time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                     best.kernels, threads_by_rows(best, candidates))


def bfloat16_copy(loaded):
    """The same weights in bfloat16 (rounded as loading with dtype=bfloat16 rounds them), as a LoadedModel."""
    model = copy.deepcopy(loaded.model).to(torch.bfloat16)
    return replace(loaded, model=model, dtype=torch.bfloat16, load_time_s=0.0, backend="auto", tuned=None, _texts={},
                   kernels="torch")


# --- what loading asks -------------------------------------------------------------------------------------

_CHOSEN: dict[str, TunedPath] = {}  # model name -> the path its latest `auto` load ran by (this process)


def remember(name: str, path: TunedPath) -> None:
    _CHOSEN[name] = path


def chosen_for(name: str) -> Optional[TunedPath]:
    """The measured path the model of this name was last loaded by in this process (None: explicit or not measured)."""
    return _CHOSEN.get(name)


def enabled() -> bool:
    """SPECDEC_TUNING=0 turns the measured `auto` off (loading.resolve_dtype's rules then apply)."""
    return config.get("SPECDEC_TUNING")


def local_config(source: str, trust_remote_code: bool):
    """A local folder's config, or None (a hub id, or a folder whose config the loader will explain)."""
    if not os.path.isdir(source):
        return None
    try:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    except Exception:  # noqa: BLE001 (the load itself reports what is wrong, one line)
        return None


def cached_for(source: str, device: torch.device, trust_remote_code: bool = False, blocks=()) -> Optional[TunedPath]:
    """The cached choice for a local model folder on this machine, without measuring (None: none yet)."""
    config = local_config(source, trust_remote_code)
    return cached_path(path_key(config, device, blocks)) if config is not None else None


def path_key(config, device: torch.device, blocks=()) -> dict:
    """The record's key: the model's shape and this machine (tuning_key) and the GGUF block formats tried."""
    return {**tuning_key(config, device), **({"gguf blocks": sorted(blocks)} if blocks else {})}


def tuned_path(source: str, device: torch.device, load_float32: Callable[[], object], *,
               trust_remote_code: bool = False, refresh: bool = False, say: Callable[[str], None] = lambda m: None,
               blocks: Optional[dict] = None) -> TunedPath:
    """The cached choice for this model's key, or a fresh measurement (stored). load_float32() loads it in float32 (the
    shared model cache); blocks: {format: load()} of its GGUF block paths (the key names them)."""
    config = local_config(source, trust_remote_code)
    loaded = None
    if config is None:
        loaded = load_float32()
        config = loaded.model.config
    key = path_key(config, device, blocks or ())
    known = None if refresh else cached_path(key)
    if known is not None:
        return known
    say("Measuring the fastest exact path on this machine (once per model shape and machine: a few seconds)…")
    path = measure_paths(loaded or load_float32(), key, blocks=blocks)
    store(path)
    return path


def summary(path: TunedPath) -> str:
    """One line for cards and logs: 'float32, 1 thread (static, float16 weight copies): step 14.2 ms, verify 19.0 ms;
    threads by rows: 1: 1, 2-5: 2, 6-17: 2'."""
    chosen = path.chosen
    runner = f" ({chosen.runner})" if chosen is not None and chosen.runner else ""
    figures = f": step {chosen.step_ms:.1f} ms, verify {chosen.verify_ms:.1f} ms" if chosen is not None else ""
    by_rows = f"; {rows_text(path.threads_by_rows)}" if path.threads_by_rows else ""
    return f"{path.label}{runner}{figures}{by_rows}"


def rows_text(counts: dict) -> str:
    """'threads by rows: 1: 1, 2-5: 2, 6-17: 2' (rows of a forward: its thread count)."""
    return "threads by rows: " + ", ".join(f"{bucket}: {count}" for bucket, count in counts.items())
