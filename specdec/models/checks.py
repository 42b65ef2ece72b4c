"""What a folder or hub id holds, checked before and after its weights load, and load failures
explained in one line: not a causal LM (encoder-only, encoder-decoder, vision), damaged or incomplete
weights, pickled weights, custom code."""
from __future__ import annotations

import os

from specdec.errors import ModelLoadError, first_line

# Masked-language (encoder-only) model types that transformers can still wrap in a *ForCausalLM /
# *LMHeadModel class; they only predict the next token when trained as decoders (config.is_decoder).
ENCODER_ONLY = {
    "albert", "bert", "bert-generation", "big_bird", "camembert", "data2vec-text", "deberta", "deberta-v2",
    "distilbert", "electra", "ernie", "esm", "megatron-bert", "modernbert", "mpnet", "nomic_bert", "rembert",
    "roberta", "roformer", "xlm", "xlm-roberta", "xmod",
}
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
VISION_HINTS = ("Image", "Vision", "ViT", "Video", "Audio", "Speech", "CTC")
NEEDS = "SpecDec Lab needs a decoder-only model that predicts the next token (a Llama, Qwen2, GPT-2 or Pythia checkpoint…)"


def model_kind(config) -> str | None:
    """None for a causal LM; otherwise what the config says the model is, in words."""
    architectures = list(getattr(config, "architectures", None) or [])
    model_type = getattr(config, "model_type", "") or ""
    is_decoder = bool(getattr(config, "is_decoder", False))
    if getattr(config, "is_encoder_decoder", False):
        return "an encoder-decoder (sequence-to-sequence) model"
    if model_type in ENCODER_ONLY and not is_decoder:
        return "an encoder-only (masked language) model"
    if any(hint in " ".join(architectures) for hint in VISION_HINTS) or hasattr(config, "vision_config") or \
            hasattr(config, "image_size"):
        return "a vision or multimodal model" if not hasattr(config, "audio_config") else "an audio model"
    if architectures and not any(a.endswith(CAUSAL_SUFFIXES) for a in architectures):
        return "not a causal language model"
    if not architectures:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            return "not a causal language model"
    return None


def check_causal_lm(name: str, config) -> None:
    kind = model_kind(config)
    if kind is None:
        return
    label = ", ".join(getattr(config, "architectures", None) or []) or getattr(config, "model_type", "") or "unknown"
    prefix = f"{name} is {kind} ({label})" if not kind.startswith("not") else f"{name} ({label}) is {kind}"
    raise ModelLoadError(f"{prefix}: {NEEDS}")


def check_loading_info(name: str, info: dict | None) -> None:
    """Weights that did not cover the model (transformers would fill the gaps with random numbers)."""
    if not info:
        return
    missing = sorted(info.get("missing_keys") or [])
    mismatched = sorted(info.get("mismatched_keys") or [])
    if missing or mismatched:
        gaps = missing or [str(m) for m in mismatched]
        what = "missing from" if missing else "of the wrong shape in"
        raise ModelLoadError(f"{name}'s weights are incomplete: {len(gaps)} tensor(s) {what} its safetensors "
                             f"(e.g. {gaps[0]}); copy or download the model again")


def explain_load_failure(name: str, source: str, exc: BaseException) -> str:
    """One line a user can act on, for a config or weights load that raised."""
    text = str(exc)
    if os.path.isdir(source):
        files = set(os.listdir(source))
        if "config.json" not in files:
            return f"{source} is not a model folder (no config.json)"
        if not any(f.endswith(".safetensors") for f in files):
            return f"{name} has no .safetensors weights; SpecDec Lab loads safetensors only (no pickled .bin files)"
    if "trust_remote_code" in text:
        return f"{name} needs custom code from its repository; it is only run when the operator enables trust_remote_code"
    if type(exc).__name__ == "SafetensorError" or "deserializ" in text or "safetensors" in text.lower() and \
            ("header" in text or "incomplete" in text or "truncat" in text):
        return f"{name}'s weights are damaged or incomplete ({first_line(exc)}): copy or download the model again"
    if "not a valid JSON" in text or isinstance(exc, UnicodeDecodeError):
        return f"{name}'s config.json is damaged ({first_line(exc)}): copy or download the model again"
    if "Unrecognized configuration class" in text or "Unrecognized model" in text:
        return f"{name} is not a causal language model transformers knows: {NEEDS}"
    if type(exc).__name__ == "OutOfMemoryError" or isinstance(exc, MemoryError) or "out of memory" in text.lower():
        return f"Out of memory while loading {name}: choose a smaller model or a smaller dtype"
    if "size mismatch" in text or "ignore_mismatched_sizes" in text:
        return f"{name}'s weights do not match its config.json ({first_line(exc)}): copy or download the model again"
    return f"Could not load {name}: {first_line(exc)}"
