"""A GGUF file -> a plain safetensors Llama folder, through transformers' own GGUF loader.

transformers reads a GGUF (dequantising its blocks), but refuses to `save_pretrained` the result
("quantized with gguf and is not serializable"). So the weights are copied into a fresh
`LlamaForCausalLM` built from the same config minus `quantization_config`, and that is saved: a
folder any transformers loads with no GGUF support at all. Nothing here unpickles anything: GGUF is
read through numpy memory maps, the output is safetensors.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Sequence

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, LlamaForCausalLM


def convert_gguf(gguf_path: Path, out_dir: Path, *, eos_tokens: Sequence[str] = (),
                 dtype: torch.dtype = torch.bfloat16) -> None:
    """Writes config, generation config, safetensors weights (in `dtype`) and tokenizer (with its chat
    template) for the GGUF at gguf_path into out_dir. eos_tokens: the tokens that end a turn."""
    tokenizer = load_gguf_tokenizer(gguf_path)
    model = rebuild_plain(load_gguf_model(gguf_path), dtype)
    set_eos(model, tokenizer, eos_tokens)
    tokenizer.model_max_length = model.config.max_position_embeddings
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def load_gguf_tokenizer(gguf_path: Path):
    return AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)


def load_gguf_model(gguf_path: Path) -> torch.nn.Module:
    """The GGUF's model in float32, every block dequantised (no packed kernels)."""
    options = {"dtype": torch.float32}
    try:
        from transformers import GgufConfig  # transformers >= 5.2x: ask for dense weights explicitly

        options["quantization_config"] = GgufConfig(dequantize=True)
    except ImportError:  # older releases always dequantise
        pass
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name, **options)
    return model.eval()


def rebuild_plain(gguf_model: torch.nn.Module, dtype: torch.dtype) -> LlamaForCausalLM:
    """A fresh LlamaForCausalLM holding gguf_model's weights, with no trace of the quantiser."""
    if gguf_model.config.model_type != "llama":
        raise ValueError(f"expected a llama GGUF, got model type {gguf_model.config.model_type!r}")
    config = copy.deepcopy(gguf_model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = dtype
    plain = LlamaForCausalLM(config)
    plain.load_state_dict(gguf_model.state_dict(), strict=True)
    return plain.to(dtype).eval()


def set_eos(model, tokenizer, eos_tokens: Sequence[str]) -> None:
    """config and generation_config both name the end-of-turn ids (plus the tokenizer's own EOS)."""
    ids = [tokenizer.convert_tokens_to_ids(token) for token in eos_tokens]
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    if not ids:
        return
    eos = ids[0] if len(ids) == 1 else ids
    model.config.eos_token_id = eos
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=eos,
        pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else ids[0],
    )
