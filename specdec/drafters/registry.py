"""Drafters by name: the same names in the CLI (--draft), the UI's draft lists, presets and exports.

FAMILIES is the closed set of drafter families: one line each, a Drafter subclass in a file of its own that
is its own spec (drafters/base.py). A name is either one of the named drafters the families ship (prompt
lookup, the trained drafters in assets/drafters/) or a model (bundled name, hub id or folder) that becomes a
draft model (ModelDrafter), or a ReTokenisedDrafter when its tokenizer differs from the target's. `auto` is
not a drafter but a plan (specdec/planning/), which chooses among these.
"""
from __future__ import annotations

from typing import Callable, Optional

from specdec.drafters.base import Drafter, DrafterSpec
from specdec.drafters.draft_model import ModelDrafter
from specdec.drafters.eagle import EagleDrafter
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.drafters.early_exit import EarlyExitDrafter
from specdec.drafters.medusa import MedusaDrafter
from specdec.drafters.prompt_lookup import PromptLookupDrafter
from specdec.drafters.retokenised import ReTokenisedDrafter
from specdec.drafters.suffix import SuffixDrafter
from specdec.errors import IncompatibleModelsError

FAMILIES: tuple[type[Drafter], ...] = (
    PromptLookupDrafter,
    ModelDrafter,
    ReTokenisedDrafter,
    EarlyExitDrafter,
    MedusaDrafter,
    EagleDrafter,
    Eagle3Drafter,
    SuffixDrafter,
)
# the families whose drafters score their text's own ids too (draft_vocab.HeadRows; the model cards say so)
FOLLOWS_TEXT = frozenset(cls.family for cls in FAMILIES if cls.follows_text)

SPECS: tuple[DrafterSpec, ...] = tuple(spec for family in FAMILIES for spec in family.specs())
BY_NAME = {spec.name: spec for spec in SPECS}
SHIPPED = tuple(spec for spec in SPECS if spec.weights)  # the trained drafters and their tree drafts
NAMES = tuple(spec.name for spec in SHIPPED if spec.tree is None)  # the trained drafters (one weights folder each)
TREES = {spec.name: spec.tree for spec in SHIPPED if spec.tree is not None}
WEIGHTS = {spec.name: spec.weights for spec in SHIPPED if spec.tree is not None}  # a tree draft -> its head's folder


def builtin_specs() -> list[DrafterSpec]:
    """Every named drafter of FAMILIES whose weights are on this machine, in the order the app lists them."""
    return [spec for family in FAMILIES for spec in family.specs() if spec.available()]


def registered(name: str) -> Optional[DrafterSpec]:
    return next((spec for spec in builtin_specs() if spec.name == name), None)


def drafter_specs(target_name: Optional[str] = None) -> list[DrafterSpec]:
    """Named drafters usable with target_name (all of them when None)."""
    return [s for s in builtin_specs() if target_name is None or not s.targets or target_name in s.targets]


def load_drafter(name: str, target, *, load_model: Optional[Callable] = None, progress=None) -> Drafter:
    """The drafter called `name`, ready to draft for `target` (a LoadedModel): built, then warmed up
    (Drafter.warm_up), so that a run's first step drafts as fast as its later ones."""
    drafter = build_drafter(name, target, load_model=load_model, progress=progress)
    drafter.warm_up()
    return drafter


def build_drafter(name: str, target, *, load_model: Optional[Callable] = None, progress=None) -> Drafter:
    """The drafter called `name` for `target`, built but not warmed up."""
    from specdec.models.dtypes import dtype_name
    from specdec.models.loading import load_model as default_load
    from specdec.models.vocabulary import check_compatible, shared_vocab_size

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
    try:
        check_compatible(target, draft)
    except IncompatibleModelsError:
        if target.tokenizer is None or draft.tokenizer is None:
            raise
        return ReTokenisedDrafter(target, draft)
    return ModelDrafter(draft, shared_vocab_size(target, draft))
