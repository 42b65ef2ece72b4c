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
