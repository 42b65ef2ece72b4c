"""Figures for the model cards, all computed from the shipped folders.

Held-out loss uses the same held-out split as training (rebuilt from the stdlib); acceptance
figures come from the project's own engine (``specdec.generate``); samples and pins use plain
``transformers`` greedy generation in float32.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer

from training.lab_family.configs import PROFILES, TARGET
from training.lab_family.corpus import build_corpus
from training.lab_family.data import encode_documents, heldout_windows
from training.lab_family.evaluate import loss_report
from training.lab_family.export import load_training_record
from training.lab_family.tokenizer import eos_id

# Prompts end where a token boundary is natural: a trailing "\n" or space would be a token the
# byte-level BPE almost never produces there ("\n" normally merges with the next line's indentation).
CODE_PROMPTS = (
    "def fibonacci(n):",
    "import os\nimport sys\n\n\ndef main():",
    'class Stack:\n    """A simple last-in, first-out stack."""\n\n    def __init__(self):',
    "def read_lines(path):\n    with open(path) as f:",
    "    def __repr__(self):\n        return",
    "for i in range(len(items)):\n    if",
    "try:\n    import threading\nexcept ImportError:",
    "def parse_args(argv=None):\n    parser = argparse.ArgumentParser(",
)
PROSE_PROMPTS = (
    "The for statement is used to iterate over",
    "An exception is raised when",
    "This module provides functions for",
    "Return a new list containing",
    "The import system is",
    "If the argument is omitted,",
    "A class definition defines a class object",
    "Strings are immutable sequences of",
)
PROMPTS = {"code": CODE_PROMPTS, "prose": PROSE_PROMPTS}
SAMPLE_PROMPTS = (CODE_PROMPTS[0], CODE_PROMPTS[3], CODE_PROMPTS[6], PROSE_PROMPTS[0], PROSE_PROMPTS[2])
TEMPERATURES = (0.0, 1.0)
K = 4
PIN_PROMPT = "def add(a, b):"
PIN_TOKENS = 16


@dataclass(frozen=True)
class AcceptanceRow:
    draft: str
    kind: str
    temperature: float
    prompts: int
    new_tokens: int
    acceptance_rate: float
    tokens_per_target_forward: float


def model_folders(family_dir: Path) -> list[Path]:
    """Target first, then drafts in name order."""
    folders = [p for p in sorted(Path(family_dir).iterdir()) if (p / "config.json").is_file()]
    return sorted(folders, key=lambda p: (p.name != TARGET, p.name))


def load_hf(folder: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    return model.eval(), AutoTokenizer.from_pretrained(str(folder))


def heldout_figures(folders: list[Path]) -> dict[str, dict]:
    """Held-out loss / perplexity on code and prose for each folder, from its shipped weights."""
    record = load_training_record(folders[0])
    profile = PROFILES[record.get("profile", "full")]
    corpus = build_corpus(profile.max_code_files, profile.max_topics, profile.heldout_every)
    tok = Tokenizer.from_file(str(folders[0] / "tokenizer.json"))
    windows = {
        kind: heldout_windows(encode_documents(tok, getattr(corpus, f"{kind}_heldout"), eos_id(tok)),
                              profile.seq_len, profile.eval_windows)
        for kind in ("code", "prose")
    }
    return {folder.name: loss_report(load_hf(folder)[0], windows) for folder in folders}


def measure_pair(target, draft, draft_name: str, kind: str, temperature: float,
                 prompts: tuple[str, ...], max_new_tokens: int) -> AcceptanceRow:
    """Pooled over prompts: accepted / drafted, and new tokens / target decode forwards."""
    from specdec import DecodeSettings, generate

    new = drafted = accepted = forwards = 0
    for seed, prompt in enumerate(prompts):
        settings = DecodeSettings(k=K, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
        metrics = generate(target, draft, target.encode(prompt), settings).metrics
        new += metrics.new_tokens
        drafted += metrics.drafted_tokens
        accepted += metrics.accepted_tokens
        forwards += metrics.target_forwards
    return AcceptanceRow(draft_name, kind, temperature, len(prompts), new,
                         round(accepted / max(1, drafted), 3), round(new / max(1, forwards), 2))


def acceptance_figures(folders: list[Path], prompts_per_kind: int, max_new_tokens: int) -> list[AcceptanceRow]:
    """Every draft against the target (first folder) at K=4, greedy and T=1, code and prose."""
    from specdec import check_compatible, load_model

    target = load_model(str(folders[0]), device="cpu", dtype="float32")
    rows = []
    for folder in folders[1:]:
        draft = load_model(str(folder), device="cpu", dtype="float32")
        check_compatible(target, draft)
        for kind, prompts in PROMPTS.items():
            for temperature in TEMPERATURES:
                rows.append(measure_pair(target, draft, folder.name, kind, temperature,
                                         prompts[:prompts_per_kind], max_new_tokens))
    return rows


@torch.no_grad()
def greedy_continuation(model, tokenizer, prompt: str, new_tokens: int) -> list[int]:
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                         max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                         pad_token_id=tokenizer.eos_token_id)
    return out[0, ids.shape[1]:].tolist()


def greedy_samples(folder: Path, max_new_tokens: int = 64) -> list[tuple[str, str]]:
    model, tokenizer = load_hf(folder)
    return [(p, tokenizer.decode(greedy_continuation(model, tokenizer, p, max_new_tokens)))
            for p in SAMPLE_PROMPTS]


def greedy_pins(family_dir: Path) -> dict[str, list[int]]:
    """The 16-token greedy continuation of PIN_PROMPT for each model (the tests pin these)."""
    pins = {}
    for folder in model_folders(family_dir):
        model, tokenizer = load_hf(folder)
        pins[folder.name] = greedy_continuation(model, tokenizer, PIN_PROMPT, PIN_TOKENS)
    return pins
