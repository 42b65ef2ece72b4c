"""Starting a run from what a user chose: a drafter's name, `auto`, or none (the target alone).

`auto` is planned here, before the engine's Generation exists: AutoPlanner.plan picks the drafter and the auto
K schedule's prior, and the Generation runs that drafter under that schedule, recording the plan. Every other
choice passes through unchanged. The CLI, the app and the measurements start runs through start() and
generate(), so `auto` works wherever a drafter does.
"""
from __future__ import annotations

from typing import Callable, Optional

from specdec.drafters import registry
from specdec.drafters.draft_model import as_drafter
from specdec.engine.decoding import Generation
from specdec.engine.events import DecodeSettings, RunResult
from specdec.engine.schedules import make_schedule
from specdec.planning.auto import AutoPlanner
from specdec.planning.choice import AUTO


def load_drafter(name: str, target, *, load_model: Optional[Callable] = None, progress=None):
    """The drafter called `name` for `target` (registry.load_drafter), or, for `auto`, the planner that will
    choose one per run among the target's named drafters."""
    if name == AUTO:
        candidates = registry.drafter_specs(target.name)
        return AutoPlanner(target, candidates,
                           lambda chosen: registry.load_drafter(chosen, target, load_model=load_model))
    return registry.load_drafter(name, target, load_model=load_model, progress=progress)


def draft_names(target_name: Optional[str] = None) -> list[str]:
    """What a run's draft may be called, as the app lists them: `auto`, then the named drafters for target_name
    (any model name works too: registry.load_drafter)."""
    return [AUTO] + [spec.name for spec in registry.drafter_specs(target_name)]


def start(target, draft, prompt_ids: list[int], settings: DecodeSettings = DecodeSettings(), **kwargs) -> Generation:
    """A Generation of `draft` (None, a Drafter, a LoadedModel: the draft-model drafter, or an AutoPlanner, planned
    here first)."""
    if not isinstance(draft, AutoPlanner):
        return Generation(target, as_drafter(target, draft), prompt_ids, settings, **kwargs)
    plan = draft.plan(prompt_ids, settings)
    schedule = kwargs.pop("schedule", None) or make_schedule("auto", settings.k, plan.prior)
    return Generation(target, plan.drafter, prompt_ids, settings, schedule=schedule, label=AUTO,
                      plan=plan.choice.to_dict(), **kwargs)


def generate(target, draft, prompt_ids: list[int], settings: DecodeSettings = DecodeSettings(), **kwargs) -> RunResult:
    """Run to the end and return the RunResult."""
    return start(target, draft, prompt_ids, settings, **kwargs).result()


