"""Drafters by name: the same names in the CLI (--draft), the UI's draft lists, presets and exports.

A name is either a built-in drafter (builtin_specs: prompt lookup, the trained heads of the draft zoo) or a model
(bundled name, hub id or folder) that becomes a ModelDrafter, or a ReTokenisedDrafter when its
tokenizer differs from the target's.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..errors import IncompatibleModelsError
from .base import Drafter
from .spec import DrafterSpec


def builtin_specs() -> list[DrafterSpec]:
    """Every built-in drafter whose weights are on this machine, in the order the app lists them: prompt
    lookup, then the draft zoo (kept lazy: building the list imports torch modules)."""
    from .. import zoo
    from .prompt_lookup import SPEC as PROMPT_LOOKUP

    return [spec for spec in (PROMPT_LOOKUP, *zoo.SPECS) if spec.available()]


def registered(name: str) -> Optional[DrafterSpec]:
    return next((spec for spec in builtin_specs() if spec.name == name), None)


def drafter_specs(target_name: Optional[str] = None) -> list[DrafterSpec]:
    """Built-in drafters usable with target_name (all of them when None)."""
    return [s for s in builtin_specs() if target_name is None or not s.targets or target_name in s.targets]


def load_drafter(name: str, target, *, load_model: Optional[Callable] = None, progress=None) -> Drafter:
    """The drafter called `name`, ready to draft for `target` (a LoadedModel)."""
    from ..loading import check_compatible, dtype_name, load_model as default_load, shared_vocab_size

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
    from .model import ModelDrafter
    from .retokenised import ReTokenisedDrafter

    try:
        check_compatible(target, draft)
    except IncompatibleModelsError:
        if target.tokenizer is None or draft.tokenizer is None:
            raise
        return ReTokenisedDrafter(target, draft)
    return ModelDrafter(draft, shared_vocab_size(target, draft))


def as_drafter(target, draft) -> Optional[Drafter]:
    """None, a Drafter, or a LoadedModel (the draft-model drafter; its tokenizer must match)."""
    if draft is None or isinstance(draft, Drafter):
        return draft
    from ..loading import check_compatible, shared_vocab_size
    from .model import ModelDrafter

    check_compatible(target, draft)
    return ModelDrafter(draft, shared_vocab_size(target, draft))
