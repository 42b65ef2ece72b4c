"""Errors the engine raises on purpose. Each message is meant to be shown to a user as is."""


class SpecDecError(Exception):
    """Base class: a clear, user-facing problem (never a bug)."""


class InvalidSettingsError(SpecDecError, ValueError):
    pass


class ModelLoadError(SpecDecError):
    pass


class OfflineError(ModelLoadError):
    """An online model was asked for, it is not cached locally, and the hub cannot be reached."""


class IncompatibleModelsError(SpecDecError):
    pass


class LocalPathsDisabledError(ModelLoadError):
    """This deployment does not allow loading models from arbitrary local paths."""


class NotOfferedError(ModelLoadError):
    """A public deployment downloads only the models it offers: a visitor named another, not downloaded here."""


def first_line(exc: BaseException) -> str:
    """An exception's message in one line for a user: its first line, or its type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether exc says the device or the host ran out of memory (torch's OutOfMemoryError, MemoryError, or a
    backend's "out of memory" message)."""
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or \
        "out of memory" in str(exc).lower()
