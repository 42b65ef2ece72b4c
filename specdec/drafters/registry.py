"""Drafters by name: the same names in the CLI (--draft), the UI's draft lists, presets and exports.

A name is either registered here (prompt lookup, the trained heads of the draft zoo, …) or a model
(bundled name, hub id or folder) that becomes a ModelDrafter, or a ReTokenisedDrafter when its
tokenizer differs from the target's.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import IncompatibleModelsError
from .base import Drafter


@dataclass(frozen=True)
class DrafterSpec:
    name: str
    family: str
    description: str  # one line: what it reads from the target, what it costs
    build: Callable  # (target: LoadedModel, load_model: Callable) -> Drafter
    targets: tuple[str, ...] = ()  # target names it was made for; empty: any target


_REGISTRY: dict[str, DrafterSpec] = {}


def register(spec: DrafterSpec) -> DrafterSpec:
    _REGISTRY[spec.name] = spec
    return spec


def registered(name: str) -> Optional[DrafterSpec]:
    _import_builtins()
    return _REGISTRY.get(name)


def drafter_specs(target_name: Optional[str] = None) -> list[DrafterSpec]:
    """Registered drafters usable with target_name (all of them when None), in registration order."""
    _import_builtins()
    return [s for s in _REGISTRY.values() if target_name is None or not s.targets or target_name in s.targets]


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


_builtins_imported = False


def _import_builtins() -> None:
    """Modules that register drafters at import (kept lazy: they may import torch modules)."""
    global _builtins_imported
    if _builtins_imported:
        return
    _builtins_imported = True
    from . import auto, prompt_lookup  # noqa: F401
    if importlib.util.find_spec(f"{__package__.rsplit('.', 1)[0]}.zoo") is not None:
        from .. import zoo  # noqa: F401  (the trained SmolLM2 drafters)
