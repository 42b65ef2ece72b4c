"""Model folders that are wrong in one way each, for the bad-input tables (CLI and API)."""
from __future__ import annotations

import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    BertConfig,
    BertForMaskedLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
    ViTConfig,
    ViTModel,
)

from tests.tiny_models import build_model, save, tiny_config

WEIGHTS = "model.safetensors"


def good(root: Path) -> str:
    return save(build_model(tiny_config("llama"), seed=0), root / "good")


def _copy(root: Path, name: str) -> Path:
    folder = root / name
    shutil.copytree(root / "good", folder)
    return folder


def truncated(root: Path) -> str:
    folder = _copy(root, "truncated")
    data = (folder / WEIGHTS).read_bytes()
    (folder / WEIGHTS).write_bytes(data[: len(data) // 2])
    return str(folder)


def garbage(root: Path) -> str:
    folder = _copy(root, "garbage")
    (folder / WEIGHTS).write_bytes(b"not safetensors at all " * 50)
    return str(folder)


def empty_weights(root: Path) -> str:
    folder = _copy(root, "empty-weights")
    (folder / WEIGHTS).write_bytes(b"")
    return str(folder)


def missing_tensor(root: Path) -> str:
    folder = _copy(root, "missing-tensor")
    tensors = load_file(folder / WEIGHTS)
    tensors.pop("model.layers.0.mlp.down_proj.weight")
    save_file(tensors, folder / WEIGHTS, metadata={"format": "pt"})
    return str(folder)


def wrong_shape(root: Path) -> str:
    folder = _copy(root, "wrong-shape")
    tensors = load_file(folder / WEIGHTS)
    tensors["model.layers.0.mlp.down_proj.weight"] = torch.zeros(3, 3)
    save_file(tensors, folder / WEIGHTS, metadata={"format": "pt"})
    return str(folder)


def damaged_config(root: Path) -> str:
    folder = _copy(root, "damaged-config")
    (folder / "config.json").write_text("{ this is not json")
    return str(folder)


def no_weights(root: Path) -> str:
    folder = _copy(root, "no-weights")
    (folder / WEIGHTS).unlink()
    return str(folder)


def encoder_only(root: Path) -> str:
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    BertForMaskedLM(config).save_pretrained(root / "bert")
    return str(root / "bert")


def vision(root: Path) -> str:
    config = ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, image_size=32,
                       patch_size=8)
    ViTModel(config).save_pretrained(root / "vit")
    return str(root / "vit")


def encoder_decoder(root: Path) -> str:
    config = T5Config(vocab_size=50, d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=16)
    T5ForConditionalGeneration(config).save_pretrained(root / "t5")
    return str(root / "t5")


def long_context(root: Path) -> str:
    """Claims 2**40 positions: only the memory check stands between a long run and the allocator."""
    return save(build_model(tiny_config("llama", max_position_embeddings=2**40), seed=0), root / "long-context")


def large(root: Path) -> str:
    """About 51 MB of float32 weights (a 100k-token vocabulary), for small model-memory budgets."""
    config = tiny_config("llama", vocab_size=100_000, hidden_size=128, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=64)
    return save(build_model(config, seed=0), root / "large")


WORDS = ["<eos>", "the", "cat", "sat", "on", "a", "mat"]


def _word_folder(root: Path, name: str, chat_template: str | None = None) -> str:
    """A tiny llama whose word-level tokenizer has no unknown token (any other word cannot be encoded)."""
    backend = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token=None))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<eos>")
    if chat_template:
        tokenizer.chat_template = chat_template
    folder = save(build_model(tiny_config("llama", vocab_size=len(WORDS)), seed=0), root / name)
    tokenizer.save_pretrained(folder)
    return folder


def no_unknown_token(root: Path) -> str:
    return _word_folder(root, "no-unk")


def refusing_chat_template(root: Path) -> str:
    return _word_folder(root, "bad-template", "{{ raise_exception('This model has no chat format') }}")


def build_all(root: Path) -> dict[str, str]:
    """Every folder above, by name (the good one first: the damaged ones are copies of it)."""
    folders = {"good": good(root)}
    for make in (truncated, garbage, empty_weights, missing_tensor, wrong_shape, damaged_config, no_weights,
                 encoder_only, vision, encoder_decoder, long_context, large, no_unknown_token, refusing_chat_template):
        folders[make.__name__] = make(root)
    return folders
