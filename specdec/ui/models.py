"""Loading models for a callback, with progress messages, and turning failures into clear messages."""
from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Iterator

from specdec.errors import SpecDecError, is_out_of_memory

log = logging.getLogger(__name__)
_DONE = object()


def pick_name(choice: str | None, custom: str | None) -> str:
    """The free "name or path" field wins over the preset dropdown when it is filled."""
    return (custom or "").strip() or (choice or "").strip()


def describe_error(exc: BaseException) -> str:
    """A message a user can act on; unexpected errors are logged with their traceback."""
    if isinstance(exc, SpecDecError):
        return str(exc)
    if is_out_of_memory(exc):
        return ("Out of memory: this pair does not fit on this device. Try a smaller preset, fewer new "
                "tokens or a smaller K.")
    if isinstance(exc, ValueError):
        return str(exc)
    log.exception("unexpected error in a callback", exc_info=exc)
    return f"Unexpected error ({type(exc).__name__}: {exc}). The app is still running; try again."


def load_models(load: Callable, names: list[str]) -> Iterator[str]:
    """Generator: yields loading messages while `load(name, progress=...)` runs in a thread, then
    returns the models (use `models = yield from load_models(...)`); re-raises a loading error."""
    messages: queue.Queue = queue.Queue()
    box: dict = {}

    def work():
        try:
            box["models"] = [load(name, progress=messages.put) for name in names]
        except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread)
            box["error"] = exc
        finally:
            messages.put(_DONE)

    threading.Thread(target=work, name="specdec-load", daemon=True).start()
    while (message := messages.get()) is not _DONE:
        yield str(message)
    if "error" in box:
        raise box["error"]
    return box["models"]


def load_target_and_drafts(load: Callable, load_drafter: Callable, target_name: str,
                           draft_names: list[str]) -> Iterator[str]:
    """Generator like load_models: the target, then each drafter for it (a draft model, prompt lookup,
    a trained head, …); returns [target, *drafters]."""
    def load_all(_, progress=None):
        target = load(target_name, progress=progress)
        return [target] + [load_drafter(name, target, load_model=load, progress=progress) for name in draft_names]

    models = yield from load_models(load_all, [None])
    return models[0]
