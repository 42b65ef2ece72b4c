"""The `auto` drafter's cost figures on this machine: c and v(K) per drafter, measured once and cached.

The probe runs the engine itself (decoding.Generation, greedy, past end of text) on a fixed chat prompt: the target
alone (no drafter loaded), then the drafter with a schedule that cycles K through 1, 2, …, k_max (a tree drafter:
its cards' depth) ROUNDS times (the first round warms up), then the target alone again. From the steps (theory.py's
measured forms):
  plain step  median step of the two target-only runs: the unit of c and v, as a speedup's baseline is the target
              alone (the probe's own K = 0 steps, each right after its largest K, measured 10% longer: every c and
              v was underrated; docs/benchmarks.md)
  c(K)        drafting time of a step that drafted K tokens / K / plain step
  v(K)        target side (verification and bookkeeping) of such a step / plain step
both read off a Theil–Sen line over K through every timed step (smoothed: robust to steps slowed by
another process; a drafter whose drafting time does not grow with K, as Medusa's single call, gets a flat line).
A few seconds per drafter. Cached in the model cache folder (auto_costs.json, runners/machine_records.py),
keyed like tuning.py's key (model shape, device, CPU, torch, OpenMP policy, cores) plus the target's dtype and
runner and the drafter's name: another machine, dtype or drafter is measured afresh.
"""
from __future__ import annotations

import statistics
import time
from typing import Optional

from specdec.engine.events import DecodeSettings
from specdec.engine.schedules import KSchedule
from specdec.engine.theory import fit_line, step_seconds
from specdec.planning.choice import CARD_K, DrafterCosts
from specdec.runners import machine_records

FILE_NAME = "auto_costs.json"
FORMAT = 4  # bumped when the probe or what it measures changes: older records are measured again (3: the plain
# step from target-only runs, not from K = 0 steps with the drafter loaded; 4: drafters sharing the target's tensors
# run on the target's kernels)
ROUNDS = 5  # cycles of every K; the first warms up
PROBE_TEXT = "Explain how a bicycle works, step by step."

_MEMORY: dict[str, DrafterCosts] = {}  # key text -> costs, this process


class CyclingSchedule(KSchedule):
    """K from a fixed cycle, step after step (the probe's)."""

    name = "probe"

    def __init__(self, cycle: list[int]):
        super().__init__(max(cycle))
        self.cycle, self.index = cycle, 0

    def next_k(self) -> int:
        k = self.cycle[self.index % len(self.cycle)]
        self.index += 1
        return k


def probe_cycle(drafter, k_max: int) -> list[int]:
    if getattr(drafter, "tree_shape", None) is not None:
        return [CARD_K]
    return list(range(1, k_max + 1))


def probe_events(target, drafter, prompt_ids: list[int], cycle: list[int], rounds: int = ROUNDS) -> list:
    """The probe's StepEvents (every round, warm-up included), from one greedy run past end of text."""
    from specdec.engine.decoding import Generation

    steps = len(cycle) * rounds
    settings = DecodeSettings(max_new_tokens=steps * (max(cycle) + 1) + 1, k=max(cycle), temperature=0.0, seed=0)
    gen = Generation(target, drafter, prompt_ids, settings, ignore_eos=True, schedule=CyclingSchedule(cycle))
    events = []
    try:
        for event in gen:
            events.append(event)
            if len(events) >= steps:
                break
    finally:
        gen.close()
    return events


def target_only_steps(target, prompt_ids: list[int], steps: int) -> list[float]:
    """Seconds of each step of the target alone (no drafter loaded), greedy past end of text, the first left out
    (it warms up)."""
    from specdec.engine.decoding import Generation

    settings = DecodeSettings(max_new_tokens=steps + 1, k=1, temperature=0.0, seed=0)
    result = Generation(target, None, prompt_ids, settings, ignore_eos=True).result()
    return [step_seconds(e) for e in result.events[1:]]


def costs_from_events(name: str, events: list, tree: bool, warm_up: int, plain: float) -> DrafterCosts:
    """c(K) and v(K) over the steps after the warm-up (a chain: by tokens drafted; a tree: by depth planned), as
    ratios to ``plain``, the seconds of a target-only step."""
    timed = events[warm_up:]
    by_k: dict[int, list] = {}
    for e in timed:
        k = e.k_planned if tree else e.k
        if e.k_planned > 0 and (tree or e.k == e.k_planned):
            by_k.setdefault(k, []).append(e)
    ks = sorted(by_k)
    draft = smoothed(ks, [[e.draft_time_s for e in by_k[k]] for k in ks])
    side = smoothed(ks, [[e.verify_time_s + e.other_time_s for e in by_k[k]] for k in ks])
    c = {k: max(0.0, d) / k / plain for k, d in zip(ks, draft)}
    v = {k: max(t, 0.0) / plain for k, t in zip(ks, side)}
    return DrafterCosts(name, c, v, tree, plain * 1e3)


def smoothed(ks: list[int], samples: list[list[float]]) -> list[float]:
    """Per K, the value on a Theil–Sen line through every timed step (theory.fit_line: robust to a few steps
    slowed by another process, which a median of a handful per K is not); a single K: its median."""
    if len(ks) < 2:
        return [statistics.median(s) for s in samples]
    xs = [k for k, values in zip(ks, samples) for _ in values]
    ys = [y for values in samples for y in values]
    intercept, slope = fit_line(xs, ys)
    return [intercept + slope * k for k in ks]


def measure_costs(target, drafter, prompt_ids: list[int], k_max: int, rounds: int = ROUNDS) -> DrafterCosts:
    started = time.perf_counter()
    cycle = probe_cycle(drafter, k_max)
    plain_steps = len(cycle) * rounds
    before = target_only_steps(target, prompt_ids, plain_steps)
    events = probe_events(target, drafter, prompt_ids, cycle, rounds)
    after = target_only_steps(target, prompt_ids, plain_steps)
    costs = costs_from_events(drafter.name, events, getattr(drafter, "tree_shape", None) is not None, len(cycle),
                              statistics.median(before + after))
    return DrafterCosts(costs.name, costs.c, costs.v, costs.tree, costs.plain_ms,
                        time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), round(time.perf_counter() - started, 2))


def cost_key(target, drafter_name: str, k_max: int) -> dict:
    from specdec.models.loading import dtype_name

    return {**machine_records.tuning_key(target.model.config, target.device), "dtype": dtype_name(target.dtype),
            "runner": getattr(target, "runner_kind", ""), "drafter": drafter_name, "k_max": k_max}


def probe_prompt(target) -> list[int]:
    from specdec.models.prompting import encode_prompt

    return encode_prompt(target, PROBE_TEXT, chat=True)


def cached_costs(target, drafter_name: str, k_max: int) -> Optional[DrafterCosts]:
    """This machine's figures for the pair, from this process or the cache file (None: not measured yet)."""
    key = cost_key(target, drafter_name, k_max)
    text = machine_records.key_text(key)
    if text in _MEMORY:
        return _MEMORY[text]
    record = machine_records.cached_record(key, FILE_NAME, FORMAT)
    try:
        costs = DrafterCosts.from_dict(record) if record else None
    except (TypeError, KeyError, ValueError):  # another layout: measured again
        costs = None
    if costs is not None:
        _MEMORY[text] = costs
    return costs


def costs_for(target, drafter, k_max: int, *, refresh: bool = False, say=lambda message: None) -> DrafterCosts:
    """The cached figures, or a fresh probe (stored)."""
    known = None if refresh else cached_costs(target, drafter.name, k_max)
    if known is not None:
        return known
    say(f"Measuring {drafter.name}'s costs on this machine (once: a few seconds)…")
    costs = measure_costs(target, drafter, probe_prompt(target), k_max)
    key = cost_key(target, drafter.name, k_max)
    machine_records.write_record(key, {**costs.__dict__}, FILE_NAME, FORMAT)
    _MEMORY[machine_records.key_text(key)] = costs
    return costs
