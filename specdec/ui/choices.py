"""The names the app lists, from one place: every drafter list a person sees (the sidebar's Draft, the Sweep's drafts)
and the names a share link may carry, the class board may show and a typo is matched against.

The drafters come from the drafter registry (drafters/registry.FAMILIES, read when asked: a new family's one line
there puts its named drafters in every list), `auto` from the planner (specdec/planning/), and the models that can
draft from the bundled folder and the presets (models/presets.py).
"""
from __future__ import annotations

from typing import Optional

from specdec.drafters import registry
from specdec.models import presets
from specdec.planning.run import draft_names


def draft_models(target: Optional[str] = None) -> list[str]:
    """The models that can draft (a draft model, or a re-tokenised one where the tokenizers differ): the bundled
    models other than `target`, then the presets' draft models; the registry's named drafters are not models."""
    named = {spec.name for spec in registry.builtin_specs()}
    models = [name for name in presets.bundled_model_names() if name != target]
    models += [name for preset in presets.PAIR_PRESETS for name in preset.drafts]
    return [name for name in models if name not in named]


def draft_choices(target: Optional[str] = None) -> list[str]:
    """What the app lists as a draft for `target` (for any target when None), in the order it lists them: `auto`, the
    registry's named drafters for it (drafters/registry.drafter_specs), then the models that can draft, each once."""
    return list(dict.fromkeys([*draft_names(target), *draft_models(target)]))


def offered_names() -> list[str]:
    """Every model or drafter name the app offers anywhere: the targets and models of the presets and the bundled
    folder (presets.all_model_choices), then every draft choice. A name outside it is one a person typed."""
    return list(dict.fromkeys([*presets.all_model_choices(), *draft_choices()]))
