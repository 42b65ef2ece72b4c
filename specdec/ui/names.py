"""Model names a user typed: a mistyped one is reported as unknown, with the close matches; on a public deployment a
visitor's name never starts a download of a model the app does not offer."""
from __future__ import annotations

import difflib
import os
from functools import wraps
from typing import Callable, Optional

from specdec.errors import ModelLoadError, NotOfferedError
from specdec.models import presets
from specdec.models.loading import is_downloaded, is_local_path
from specdec.serving.limits import is_public
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
    """One short line: the name, then the close matches (or what a name may be)."""
    if matches:
        return f"Unknown model {name!r}. Did you mean {' or '.join(matches)}?"
    return f"Unknown model {name!r}: not a drafter, a preset, a folder here or a Hub id (organisation/name)."


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


def folders_allowed(setting: Optional[bool]) -> bool:
    """Whether the app loads models from folders on this machine: as its operator set it (--allow-local-paths,
    SPECDEC_ALLOW_LOCAL_PATHS: the Lab's allow_local_paths), else not on a public deployment (is_public)."""
    return not is_public() if setting is None else bool(setting)


def loads_for_a_visitor(name: str) -> bool:
    """Whether a public deployment loads `name` when a visitor names it: one the app offers (choices.offered_names),
    a Hub id already downloaded on this machine, or a folder (which the loader's allow_local_paths then decides)."""
    return name in offered_names() or is_local_path(name) or is_downloaded(name)


def not_offered_message(name: str) -> str:
    matches = close_matches(name)
    hint = (f" Did you mean {' or '.join(matches)}?" if matches else
            " Choose one from the Target and Draft lists, or run SpecDec Lab yourself (python app.py) to try any Hub id.")
    return (f"{name!r} is not one of the models this public deployment offers, nor downloaded on it, and a name typed "
            f"here never starts a download.{hint}")


def offered_only_when_public(load: Callable) -> Callable:
    """Wraps load(name, …): on a public deployment (serving.limits.is_public) a name that is neither offered nor
    downloaded here is refused before anything is fetched (NotOfferedError); elsewhere every name loads."""
    @wraps(load)
    def checked(name, *args, **kwargs):
        text = (name or "").strip()
        if text and is_public() and not loads_for_a_visitor(text):
            raise NotOfferedError(not_offered_message(text))
        return load(name, *args, **kwargs)
    return checked
