"""A Sweep over K (and methods) on vLLM: speculation is fixed when a vLLM server starts, so each setting gets a
server of its own, started through the launcher one after the other, measured against the baseline server
(engine.measure_speedup: specdec/measure/speedup.py's rules) and stopped before the next one starts.

The baseline server fixes the target: every setting's server loads the folder or hub id the baseline serves
(/v1/models' root), under the same served name, with the launcher's dtype of the baseline when the lab started it
(else bfloat16, vLLM CPU's usual). Each start takes minutes on a CPU (~2.5-6 on a 2-core one: docs/vllm.md).
Rows are the lab's SweepRows, so the Sweep's views draw them; what vLLM does not expose (the draft's and the
verification's costs c and v(K), hence the theory forms; the drafter's memory) is left None.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Optional

from specdec.engine.events import DecodeSettings
from specdec.measure.speedup import SWEEP, Measurement, Policy
from specdec.measure.sweep import SweepRow
from specdec.vllm import engine as vllm_engine
from specdec.vllm import launcher as default_launcher
from specdec.vllm.client import VllmError
from specdec.vllm.launcher import ServeSpec

NOT_AVAILABLE = ("not available from vLLM: c and v(K) (the draft's and the verification's costs inside the server), "
                 "so no theory forms; the drafter's memory")


@dataclass(frozen=True)
class Setting:
    """One server of the sweep: a method and K (and the draft folder for draft_model / eagle / eagle3)."""

    method: str
    k: int
    draft: Optional[str] = None

    @property
    def name(self) -> str:
        """The sweep's line: one per method and draft (vllm ngram, vllm draft_model smollm2-135m-draft)."""
        return f"vllm {self.method}" + (f" {self.draft.rstrip('/').rsplit('/', 1)[-1]}" if self.draft else "")


@dataclass
class Progress:
    """What the sweep is doing: `message` for the status line; `row` once a setting is measured; `estimate` while
    it is measured."""

    index: int  # the setting (0-based)
    total: int
    setting: Setting
    message: str
    row: Optional[SweepRow] = None
    estimate: object = None


PROMPT_LOOKUP = "prompt-lookup"  # the lab's drafter whose vLLM counterpart is ngram
ZOO_METHODS = {"smollm2-135m-draft": "draft_model", "smollm2-135m-eagle": "eagle",  # export.EXPORTABLE's
               "smollm2-135m-eagle3": "eagle3"}


def settings_for_drafts(drafts: list[str], ks: list[int], resolve: Callable[[str], str]) -> list[Setting]:
    """The Sweep tab's drafts as vLLM settings: prompt-lookup -> ngram, the zoo's exportable drafts -> draft_model /
    eagle / eagle3 with their exported folder (resolve: export.resolve_draft), a folder or hub id (it has a "/") ->
    draft_model; each at every K. Any other name (a tree, Medusa, early exit, auto, the lab family's drafts) has
    no vLLM counterpart and is refused before anything starts."""
    out = []
    for name in drafts:
        if name == PROMPT_LOOKUP:
            method, draft = "ngram", None
        elif name in ZOO_METHODS or "/" in name:
            method, draft = ZOO_METHODS.get(name, "draft_model"), resolve(name)
        else:
            raise VllmError(f"{name!r} has no vLLM counterpart: on vLLM the sweep takes prompt-lookup (ngram), "
                            f"{', '.join(ZOO_METHODS)} or a draft checkpoint (folder or hub id)")
        out.extend(Setting(method, k, draft) for k in ks)
    if not out:
        raise VllmError("pick at least one draft for the sweep")
    return out


def serve_spec(baseline: vllm_engine.Server, setting: Setting) -> ServeSpec:
    """The setting's server: the baseline's target, served name, dtype (when known) and context length."""
    info = baseline.info
    dtype = info.dtype if info.dtype in ("bfloat16", "float32", "float16") else "bfloat16"
    return ServeSpec(target=info.root, name=info.model, method=setting.method, k=setting.k, draft=setting.draft,
                     dtype=dtype, max_model_len=info.max_model_len or 2048)


def make_row(setting: Setting, measurement: Measurement, temperature: float) -> SweepRow:
    """A SweepRow from a setting's measurement: speedup with its interval, acceptance from the latest coloured
    completion; c, v(K) and memory None (not exposed by vLLM)."""
    est, lead = measurement.estimate(), measurement.lead_result
    events = lead.events if lead is not None else []
    drafted = sum(e.k for e in events)
    evaluated = sum(min(e.num_accepted + 1, e.k) for e in events if e.k)
    accepted = sum(e.num_accepted for e in events)
    return SweepRow(draft=setting.name, k=setting.k, temperature=temperature, new_tokens=est.new_tokens,
                    drafted=drafted, evaluated=evaluated, accepted=accepted,
                    acceptance_rate=accepted / drafted if drafted else None,
                    alpha_point=accepted / evaluated if evaluated else None,
                    tokens_per_forward=lead.metrics.tokens_per_forward if lead is not None else None,
                    tokens_per_s=est.lead_tokens_per_s, baseline_tokens_per_s=est.follow_tokens_per_s,
                    speedup=est.ratio, speedup_low=est.low, speedup_high=est.high, repeats=est.repeats,
                    proposal_share=None, c=None, v=None)


def sweep(baseline: vllm_engine.Server, settings: list[Setting], prompt_ids: list[int], decode: DecodeSettings,
          python, *, temperatures: Optional[list[float]] = None, policy: Policy = SWEEP,
          should_stop: Callable[[], bool] = lambda: False, launcher=default_launcher,
          cache: Optional[dict] = None) -> Iterator[Progress]:
    """Generator of Progress: for each setting, start its server (progress lines while it warms up), measure it
    against `baseline` at each temperature (default: decode's), stop it; a Progress with each row. Stop
    (should_stop) ends the wait or the measurement and stops the server; so does closing the generator: no server
    is left running."""
    cache = {} if cache is None else cache
    temperatures = [decode.temperature] if temperatures is None else temperatures
    total = len(settings)
    for index, setting in enumerate(settings):
        if should_stop():
            return
        record = launcher.start(python, serve_spec(baseline, setting), say=lambda _: None)
        started = time.monotonic()
        try:
            yield Progress(index, total, setting,
                           f"starting its server at {record['url']} (pid {record['pid']}; minutes on a CPU)…")
            for line in launcher.poll_healthy([record]):
                if should_stop():
                    return
                if line:
                    yield Progress(index, total, setting, line)
            yield Progress(index, total, setting, f"server ready after {time.monotonic() - started:.0f} s")
            lead = vllm_engine.connect(record["url"], baseline.info.model, speculative=True,
                                       record_for=launcher.record_for)
            for temperature in temperatures:
                point = replace(decode, k=setting.k, temperature=temperature)
                estimate = None
                for estimate in vllm_engine.measure_speedup(lead, baseline, prompt_ids, point, cache=cache,
                                                            policy=policy, should_stop=should_stop):
                    yield Progress(index, total, setting, f"T={temperature:g}, measuring: {estimate.describe()}",
                                   estimate=estimate)
                if estimate is None or estimate.repeats == 0:
                    return
                row = make_row(setting, cache[vllm_engine.measurement_key(lead, baseline, prompt_ids, point)],
                               temperature)
                yield Progress(index, total, setting, f"T={temperature:g}, measured: {estimate.describe()}", row=row)
                if should_stop():
                    return
        finally:
            launcher.stop(record)


def describe(progress: Progress) -> str:
    """The status line: which setting of how many, and what it is doing."""
    return (f"vLLM sweep, setting {progress.index + 1} of {progress.total} ({progress.setting.method}, "
            f"K={progress.setting.k}): {progress.message}")
