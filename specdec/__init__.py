"""SpecDec Lab engine: exact speculative decoding with step traces. Imports neither gradio nor plotly."""
from .decoding import Generation, generate
from .errors import (
    IncompatibleModelsError,
    InvalidSettingsError,
    LocalPathsDisabledError,
    ModelLoadError,
    OfflineError,
    SpecDecError,
)
from .events import DecodeSettings, DraftToken, FinalToken, MemoryReport, RunMetrics, RunResult, StepEvent, TokenProb
from .loading import LoadedModel, check_compatible, load_model

__all__ = [
    "DecodeSettings", "DraftToken", "FinalToken", "Generation", "IncompatibleModelsError", "InvalidSettingsError",
    "LoadedModel", "LocalPathsDisabledError", "MemoryReport", "ModelLoadError", "OfflineError", "RunMetrics",
    "RunResult", "SpecDecError", "StepEvent", "TokenProb", "check_compatible", "generate", "load_model",
]
