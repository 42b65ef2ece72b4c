"""Model names a user typed: a mistyped one is reported as unknown, with the close matches."""
from __future__ import annotations

import difflib
import os
from functools import wraps
from typing import Callable

from specdec.errors import ModelLoadError
from specdec.models import presets
from specdec.ui.choices import offered_names


def close_matches(name: str, names: list[str] | None = None) -> list[str]:
    names = offered_names() if names is None else names
    by_lower = {n.lower(): n for n in names}
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    if not found and "/" in name:  # "org/mdoel": compare the part after the organisation too
        tails = {n.split("/")[-1].lower(): n for n in names}
        found = [tails[t] for t in difflib.get_close_matches(name.split("/")[-1].lower(), list(tails), 3, 0.6)]
        return found
    return [by_lower[f] for f in found]


def is_unknown(name: str, names: list[str] | None = None) -> bool:
    """Neither a known name, nor a folder here, nor an organisation/model Hub id."""
    names = offered_names() if names is None else names
    return name not in names and "/" not in name and not os.path.isdir(os.path.expanduser(name))


def unknown_model_message(name: str, matches: list[str]) -> str:
    hint = f" Did you mean {' or '.join(matches)}?" if matches else (
        f" Known here: {', '.join(presets.bundled_model_names()) or 'none'}.")
    return (f"Unknown model {name!r}: it is not a bundled model, a preset, a folder on this machine or a "
            f"downloaded Hugging Face Hub id.{hint}")


def explain_unknown_names(load: Callable) -> Callable:
    """Wraps load(name, …): when loading a name fails and the name is unknown (a typo, not a Hub id
    with an organisation), the error says "Unknown model" with the close matches instead of, say,
    "online model not downloaded"; other failures keep the engine's message (plus close matches)."""
    @wraps(load)
    def checked(name, *args, **kwargs):
        try:
            return load(name, *args, **kwargs)
        except ModelLoadError as exc:
            text = (name or "").strip()
            names = offered_names()
            if not text or text in names:
                raise
            matches = close_matches(text, names)
            if is_unknown(text, names):
                raise ModelLoadError(unknown_model_message(text, matches)) from exc
            if matches:
                raise type(exc)(f"{exc} Close matches: {', '.join(matches)}.") from exc
            raise
    return checked
