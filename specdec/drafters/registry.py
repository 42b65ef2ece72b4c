"""Drafters by name: the same names in the CLI (--draft), the UI's draft lists, presets and exports.

A name is either a built-in drafter (builtin_specs: prompt lookup, the trained heads of the draft zoo) or a model
(bundled name, hub id or folder) that becomes a ModelDrafter, or a ReTokenisedDrafter when its
tokenizer differs from the target's.
"""
from __future__ import annotations

from typing import Callable, Optional

from specdec.drafters.base import Drafter
from specdec.drafters.spec import DrafterSpec
from specdec.errors import IncompatibleModelsError
from specdec.planning.choice import AUTO, AUTO_DESCRIPTION


def build_auto(target, load_model: Optional[Callable] = None) -> Drafter:
    """The `auto` drafter (drafters/auto.py) for target, choosing among its built-in drafters with a model card."""
    from specdec.planning.auto_drafter import AutoDrafter

    candidates = [spec for spec in drafter_specs(target.name) if spec.name != AUTO]
    return AutoDrafter(target, candidates, lambda name: load_drafter(name, target, load_model=load_model))


AUTO_SPEC = DrafterSpec(name=AUTO, family="auto", description=AUTO_DESCRIPTION, build=build_auto, title="auto")


def builtin_specs() -> list[DrafterSpec]:
    """Every built-in drafter whose weights are on this machine, in the order the app lists them: auto, prompt
    lookup, then the draft zoo (kept lazy: building the list imports torch modules)."""
    from specdec.drafters import shipped as zoo
    from specdec.drafters.prompt_lookup import SPEC as PROMPT_LOOKUP

    return [spec for spec in (AUTO_SPEC, PROMPT_LOOKUP, *zoo.SPECS) if spec.available()]


def registered(name: str) -> Optional[DrafterSpec]:
    return next((spec for spec in builtin_specs() if spec.name == name), None)


def drafter_specs(target_name: Optional[str] = None) -> list[DrafterSpec]:
    """Built-in drafters usable with target_name (all of them when None)."""
    return [s for s in builtin_specs() if target_name is None or not s.targets or target_name in s.targets]


def load_drafter(name: str, target, *, load_model: Optional[Callable] = None, progress=None) -> Drafter:
    """The drafter called `name`, ready to draft for `target` (a LoadedModel)."""
    from specdec.models.loading import check_compatible, dtype_name, shared_vocab_size
    from specdec.models.loading import load_model as default_load

    load_model = load_model or default_load
    spec = registered(name)
    if spec is not None:
        if spec.targets and target.name not in spec.targets:
            raise IncompatibleModelsError(
                f"{name} was trained for {', '.join(spec.targets)}, not for {target.name}; choose another draft"
            )
        return spec.build(target, load_model)
    kwargs = {"device": str(target.device), "dtype": dtype_name(target.dtype)}
    if progress is not None:
        kwargs["progress"] = progress
    draft = load_model(name, **kwargs)
    from specdec.drafters.draft_model import ModelDrafter
    from specdec.drafters.retokenised import ReTokenisedDrafter

    try:
        check_compatible(target, draft)
    except IncompatibleModelsError:
        if target.tokenizer is None or draft.tokenizer is None:
            raise
        return ReTokenisedDrafter(target, draft)
    return ModelDrafter(draft, shared_vocab_size(target, draft))
