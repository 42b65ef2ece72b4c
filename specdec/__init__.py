"""SpecDec Lab engine: exact speculative decoding with step traces. Imports neither gradio nor plotly."""
from specdec.process import configure_process

configure_process()  # before anything below imports torch (process.py)

from specdec.drafters.base import Drafter
from specdec.drafters.registry import drafter_specs
from specdec.engine.decoding import Generation
from specdec.engine.events import (
    DecodeSettings,
    DraftToken,
    FinalToken,
    MemoryReport,
    RunMetrics,
    RunResult,
    StepEvent,
    TokenProb,
)
from specdec.errors import (
    IncompatibleModelsError,
    InvalidSettingsError,
    LocalPathsDisabledError,
    ModelLoadError,
    OfflineError,
    SpecDecError,
)
from specdec.models.loading import LoadedModel, load_model
from specdec.models.prompting import encode_prompt
from specdec.models.vocabulary import check_compatible
from specdec.planning.run import generate, load_drafter, start

__all__ = [
    "DecodeSettings", "DraftToken", "Drafter", "drafter_specs", "encode_prompt", "load_drafter", "FinalToken", "Generation", "IncompatibleModelsError", "InvalidSettingsError",
    "LoadedModel", "LocalPathsDisabledError", "MemoryReport", "ModelLoadError", "OfflineError", "RunMetrics",
    "RunResult", "SpecDecError", "StepEvent", "TokenProb", "check_compatible", "generate", "load_model", "start",
]
