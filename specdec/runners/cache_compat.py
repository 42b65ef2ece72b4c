"""The one place that knows how transformers' cache API differs between releases.

- transformers >= 5.24: `DynamicCache.crop(tokens_to_remove)` takes a negative count; a positive
  value raises. Older 5.x (e.g. 5.17 on the GPU machines): `crop(max_length)` takes the length
  to keep. We detect which by the parameter's name, not by version strings.
- Recent releases name the model-forward cache argument `cache=`; older ones `past_key_values=`.
"""
from __future__ import annotations

import inspect

import torch

CROP_BY_COUNT = "count"  # crop(-n): remove n tokens (5.24+)
CROP_BY_LENGTH = "length"  # crop(n): keep n tokens (older releases)


def crop_style(cache) -> str:
    first = next(iter(inspect.signature(cache.crop).parameters))
    return CROP_BY_COUNT if first == "tokens_to_remove" else CROP_BY_LENGTH


def crop_cache(cache, current_length: int, keep_length: int, style: str | None = None) -> None:
    """Drop cached positions so that exactly `keep_length` remain."""
    remove = current_length - keep_length
    if remove <= 0:
        return
    if (style or crop_style(cache)) == CROP_BY_COUNT:
        cache.crop(-remove)
    else:
        cache.crop(keep_length)


def cache_argument_name(model) -> str:
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def accepts_logits_to_keep(model) -> bool:
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def cache_tensors(cache) -> list[torch.Tensor]:
    """Key/value tensors held by a cache, whichever layout the release uses."""
    tensors: list[torch.Tensor] = []
    for layer in getattr(cache, "layers", None) or []:
        tensors += [t for t in (getattr(layer, "keys", None), getattr(layer, "values", None)) if isinstance(t, torch.Tensor)]
    if not tensors:  # pre-layer releases kept parallel lists
        for name in ("key_cache", "value_cache"):
            tensors += [t for t in getattr(cache, name, []) if isinstance(t, torch.Tensor)]
    return tensors
