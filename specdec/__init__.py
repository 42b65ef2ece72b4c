"""SpecDec Lab engine: exact speculative decoding with step traces. Imports neither gradio nor plotly."""
from .process import configure_process

configure_process()  # before anything below imports torch (process.py)

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
from .drafters.base import Drafter
from .drafters.registry import drafter_specs, load_drafter
from .loading import LoadedModel, check_compatible, load_model
from .prompting import encode_prompt

__all__ = [
    "DecodeSettings", "DraftToken", "Drafter", "drafter_specs", "encode_prompt", "load_drafter", "FinalToken", "Generation", "IncompatibleModelsError", "InvalidSettingsError",
    "LoadedModel", "LocalPathsDisabledError", "MemoryReport", "ModelLoadError", "OfflineError", "RunMetrics",
    "RunResult", "SpecDecError", "StepEvent", "TokenProb", "check_compatible", "generate", "load_model",
]
