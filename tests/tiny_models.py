"""Small random-weight models built from transformers configs, saved as safetensors folders."""
from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    GPT2Config,
    GPTNeoXConfig,
    LlamaConfig,
    Qwen2Config,
)

VOCAB = 96
IDS = [4, 8, 15, 16, 23, 42, 7, 1, 3, 9, 11, 2]  # token ids below VOCAB


def drive(runner):
    """prefill, a multi-token forward, a rollback and a re-forward: the decoder's whole repertoire -> their logits."""
    runner.prefill(IDS[:4])
    first = runner.forward(IDS[4:9])
    runner.rollback(6)
    second = runner.forward(IDS[6:12])
    single = runner.forward([5])
    return first, second, single


def tiny_config(arch: str, vocab_size: int = VOCAB, **overrides):
    no_special = dict(bos_token_id=None, eos_token_id=None, pad_token_id=None)
    configs = {
        "llama": lambda: LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                     initializer_range=0.4, **no_special),
        "qwen2": lambda: Qwen2Config(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                     initializer_range=0.4, **no_special),
        "gpt2": lambda: GPT2Config(vocab_size=vocab_size, n_embd=32, n_layer=2, n_head=4, n_positions=256,
                                   initializer_range=0.4, **no_special),
        "gpt_neox": lambda: GPTNeoXConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                          num_attention_heads=4, max_position_embeddings=256, initializer_range=0.4,
                                          **no_special),
    }
    config = configs[arch]()
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def build_model(config, seed: int):
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config).eval()


def perturbed_copy(model, noise: float, seed: int):
    """A 'draft' close to the target: same architecture, weights plus relative Gaussian noise."""
    torch.manual_seed(seed)
    copy = AutoModelForCausalLM.from_config(model.config).eval()
    copy.load_state_dict(model.state_dict())
    with torch.no_grad():
        for param in copy.parameters():
            param.add_(torch.randn_like(param) * noise * (param.std() if param.numel() > 1 else 1.0))
    return copy


def save(model, folder: Path, eos_token_id: int | None = None) -> str:
    if eos_token_id is not None:
        model.config.eos_token_id = eos_token_id
        model.generation_config.eos_token_id = eos_token_id
    model.save_pretrained(folder, safe_serialization=True)
    return str(folder)
