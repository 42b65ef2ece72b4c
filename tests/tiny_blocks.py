"""A tiny Llama GGUF of quantized blocks (Q4_1 layers, Q8_0 tied embeddings: the fetched SmolLM2's mix, or all Q8_0),
written as llama.cpp's converter writes one (q and k rows permuted for its rotary layout), with the transformers model
of the same dequantised weights, for tests of the block path (runners/block_weights.py, models/block_model.py).

Shapes are the smallest the kernels take: every matrix's rows in whole groups of 32, every width in whole blocks of 32
inputs, a head size a multiple of the widest vector (16 floats)."""
from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize
from transformers import LlamaConfig, LlamaForCausalLM

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, VOCAB = 64, 2, 2, 1, 128, 96
TYPES = {"Q4_1": GGMLQuantizationType.Q4_1, "Q8_0": GGMLQuantizationType.Q8_0}


def tiny_block_config(vocab: int = VOCAB) -> LlamaConfig:
    return LlamaConfig(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                       num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HIDDEN // HEADS,
                       max_position_embeddings=1024, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
                       bos_token_id=None, eos_token_id=None, pad_token_id=None)


def permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter's q/k permutation (convert_hf_to_gguf.py, LlamaModel.permute)."""
    return weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(
        weights.shape)


def float_tensors(seed: int, vocab: int) -> dict[str, np.ndarray]:
    """Random float weights in transformers' names and order ([out, in])."""
    rng = np.random.default_rng(seed)
    kv = HIDDEN // HEADS * KV_HEADS

    def normal(*shape, scale=0.15):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    found = {"model.embed_tokens.weight": normal(vocab, HIDDEN, scale=0.5),
             "model.norm.weight": (1 + normal(HIDDEN, scale=0.1))}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        for name, shape in {"self_attn.q_proj": (HIDDEN, HIDDEN), "self_attn.k_proj": (kv, HIDDEN),
                            "self_attn.v_proj": (kv, HIDDEN), "self_attn.o_proj": (HIDDEN, HIDDEN),
                            "mlp.gate_proj": (FFN, HIDDEN), "mlp.up_proj": (FFN, HIDDEN),
                            "mlp.down_proj": (HIDDEN, FFN)}.items():
            found[p + name + ".weight"] = normal(*shape)
        found[p + "input_layernorm.weight"] = 1 + normal(HIDDEN, scale=0.1)
        found[p + "post_attention_layernorm.weight"] = 1 + normal(HIDDEN, scale=0.1)
    return found


GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}


def write_tiny_block_gguf(path: Path, layer_format: str = "Q4_1", seed: int = 0, vocab: int = VOCAB
                          ) -> tuple[Path, LlamaForCausalLM]:
    """The GGUF at path (layers in layer_format, the tied embeddings Q8_0) and the float32 transformers model holding
    exactly its dequantised weights (q and k back in transformers' order)."""
    floats = float_tensors(seed, vocab)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(HIDDEN)
    dense = {}
    for name, array in floats.items():
        if array.ndim == 1:
            gguf_name = "output_norm.weight" if name == "model.norm.weight" else _gguf_name(name)
            writer.add_tensor(gguf_name, array)
            dense[name] = array
            continue
        fmt = "Q8_0" if name == "model.embed_tokens.weight" else layer_format
        heads = {"q_proj": HEADS, "k_proj": KV_HEADS}.get(name.split(".")[-2], 0)
        stored = permute(array, heads) if heads else array
        blocks = quantize(stored, TYPES[fmt])
        back = dequantize(blocks, TYPES[fmt])
        dense[name] = permute_back(back, heads) if heads else back
        writer.add_tensor("token_embd.weight" if name == "model.embed_tokens.weight" else _gguf_name(name), blocks,
                          raw_dtype=TYPES[fmt])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model = LlamaForCausalLM(tiny_block_config(vocab)).eval()
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in dense.items()}, strict=False)
    model.tie_weights()
    return path, model


def permute_back(weights: np.ndarray, heads: int) -> np.ndarray:
    return weights.reshape(heads, weights.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(weights.shape)


def _gguf_name(name: str) -> str:
    parts = name.split(".")  # model.layers.<i>.<module>[.<sub>].weight
    module = ".".join(parts[3:-1])
    return f"blk.{parts[2]}.{GGUF_NAMES[module]}.weight"


def random_blocks(rows: int, width: int, fmt: str, seed: int = 0) -> np.ndarray:
    """A matrix of llama.cpp blocks [rows, blocks * bytes] quantized from random floats."""
    rng = np.random.default_rng(seed)
    return quantize((rng.standard_normal((rows, width)) * 0.3).astype(np.float32), TYPES[fmt])


def dense(blocks: np.ndarray, fmt: str) -> np.ndarray:
    return dequantize(blocks, TYPES[fmt])


def int8_rounded(x: torch.Tensor) -> torch.Tensor:
    """x's rows as llama.cpp's Q8_1 rounds them (blocks of 32: step max / 127, nearest even), in float64."""
    blocks = x.double().reshape(x.shape[0], -1, 32)
    largest = blocks.abs().amax(-1, keepdim=True)
    inverse = torch.where(largest > 0, 127.0 / largest.float(), torch.zeros_like(largest.float()))
    q = torch.round(x.reshape(blocks.shape) * inverse).double()  # torch.round: half to even, as lrintf here
    return ((largest.float() / 127.0).double() * q).reshape(x.shape)


def with_int8_rounded_inputs(model):
    """model, each linear layer's input rounded as int8_rounded does (what the block kernels multiply)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.register_forward_pre_hook(
                lambda _, args: (int8_rounded(args[0].reshape(-1, args[0].shape[-1])).float().reshape(args[0].shape),))
    return model
