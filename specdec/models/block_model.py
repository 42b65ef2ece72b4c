"""A Llama GGUF's own blocks as a model the engine runs: its matrices stay llama.cpp's Q4_1 / Q8_0 blocks (repacked
into the lab kernels' tiles, runners/block_weights.py), its norms float32, its rotary tables computed as transformers
computes them, and no float copy of any matrix.

Why: the model this project fetches is a llama.cpp file; dequantised, it reads 269 MB a token where its blocks read
98 MB, and decoding on a CPU is bound by those bytes. So the file can be run as published ("Q4_1 as published"),
next to the float path transformers can be compared with (the converted folder, fetch.py).

The module is transformers' LlamaForCausalLM built on the meta device, then given real tensors where the engine reads
them: every linear layer a BlockLinear, the embedding a BlockEmbedding over the tied head's blocks (one copy), the norms
and the rotary embedding real. Each decoder layer's products are registered with the lab kernels' packed layers
(lab_kernels.register_block_layer) as the stacked q/k/v, the gated gate/up pair, o and down, with the modules' matrices
views of those stacks. The config and tokenizer come from the converted folder (the same model); the GGUF's tensor
shapes are checked against the config. llama.cpp stores q and k with their rows permuted for its rotary layout;
they are put back in transformers' order (whole rows: the blocks are unchanged).
"""
from __future__ import annotations

from pathlib import Path

from specdec.errors import ModelLoadError
from specdec.runners import block_weights, lab_kernels
from specdec.runners.block_weights import BlockEmbedding, BlockLinear, BlockMatrix

import numpy as np
import torch
from torch import nn

GGUF_TYPES = {"Q4_1": "Q4_1", "Q8_0": "Q8_0"}  # GGMLQuantizationType names the kernels multiply


def unpermute_rows(raw: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k row order (its converter's permute: pairs of a head's rows interleaved) -> transformers'."""
    rows = raw.shape[0]
    return raw.reshape(heads, rows // heads // 2, 2, -1).swapaxes(1, 2).reshape(raw.shape)


class GgufTensors:
    """The GGUF's tensors by name, read through gguf-py's memory map (nothing is unpickled or executed)."""

    def __init__(self, path: Path):
        from gguf import GGUFReader

        try:
            self.reader = GGUFReader(str(path))
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"{Path(path).name} is not a readable GGUF file: {exc}") from exc
        self.tensors = {tensor.name: tensor for tensor in self.reader.tensors}
        self.path = Path(path)

    def matrix(self, name: str, rows: int, width: int, heads: int = 0) -> BlockMatrix:
        tensor = self._get(name)
        fmt = GGUF_TYPES.get(tensor.tensor_type.name)
        if fmt is None:
            raise ModelLoadError(f"{self.path.name}: {name} is {tensor.tensor_type.name}; the lab kernels multiply "
                                 f"{' and '.join(GGUF_TYPES)} blocks only")
        if [int(n) for n in tensor.shape] != [width, rows]:  # GGUF lists the inner dimension first
            raise ModelLoadError(f"{self.path.name}: {name} is {list(tensor.shape)}, the config says {[width, rows]}")
        raw = np.asarray(tensor.data)
        return block_weights.tile(unpermute_rows(raw, heads) if heads else raw, fmt)

    def vector(self, name: str, width: int) -> torch.Tensor:
        tensor = self._get(name)
        if tensor.tensor_type.name != "F32" or int(tensor.n_elements) != width:
            raise ModelLoadError(f"{self.path.name}: {name} should be {width} float32 values")
        return torch.from_numpy(np.array(tensor.data, dtype=np.float32).reshape(width))

    def has(self, name: str) -> bool:
        return name in self.tensors

    def _get(self, name: str):
        if name not in self.tensors:
            raise ModelLoadError(f"{self.path.name} holds no tensor {name}")
        return self.tensors[name]


def check_supported(config) -> None:
    if config.model_type != "llama":
        raise ModelLoadError(f"running a GGUF's blocks supports Llama models, not {config.model_type!r}")
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        raise ModelLoadError("running a GGUF's blocks supports models without biases")
    reason = lab_kernels.native_kernels.unavailable_reason()
    if reason:
        raise ModelLoadError(f"running a GGUF's blocks needs the lab kernels ({reason})")


def build_block_model(config, gguf_path: Path, generation_config=None) -> nn.Module:
    """A LlamaForCausalLM whose matrices are the GGUF's blocks (module docstring); float32 everywhere else."""
    from transformers import LlamaForCausalLM
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    check_supported(config)
    tensors = GgufTensors(gguf_path)
    d, inner, vocab = config.hidden_size, config.intermediate_size, config.vocab_size
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or d // heads
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    head = tensors.matrix("output.weight" if tensors.has("output.weight") else "token_embd.weight", vocab, d)
    embedding = head if not tensors.has("output.weight") else tensors.matrix("token_embd.weight", vocab, d)
    model.model.embed_tokens = BlockEmbedding(embedding)
    model.lm_head = BlockLinear(head)
    model.model.norm.weight = nn.Parameter(tensors.vector("output_norm.weight", d), requires_grad=False)
    model.model.rotary_emb = LlamaRotaryEmbedding(config=config)
    for index, layer in enumerate(model.model.layers):
        name = f"blk.{index}."
        q = tensors.matrix(name + "attn_q.weight", heads * head_dim, d, heads)
        k = tensors.matrix(name + "attn_k.weight", kv_heads * head_dim, d, kv_heads)
        v = tensors.matrix(name + "attn_v.weight", kv_heads * head_dim, d)
        qkv = block_weights.stack([q, k, v])
        o = tensors.matrix(name + "attn_output.weight", d, heads * head_dim)
        gated = block_weights.gated_pair(tensors.matrix(name + "ffn_gate.weight", inner, d),
                                         tensors.matrix(name + "ffn_up.weight", inner, d))
        down = tensors.matrix(name + "ffn_down.weight", d, inner)
        attn, mlp = layer.self_attn, layer.mlp
        attn.q_proj = BlockLinear(block_weights.group_slice(qkv, 0, q.rows))
        attn.k_proj = BlockLinear(block_weights.group_slice(qkv, q.rows, k.rows))
        attn.v_proj = BlockLinear(block_weights.group_slice(qkv, q.rows + k.rows, v.rows))
        attn.o_proj = BlockLinear(o)
        mlp.gate_proj, mlp.up_proj = (BlockLinear(part) for part in block_weights.unpair(gated))
        mlp.down_proj = BlockLinear(down)
        layer.input_layernorm.weight = nn.Parameter(tensors.vector(name + "attn_norm.weight", d), requires_grad=False)
        layer.post_attention_layernorm.weight = nn.Parameter(tensors.vector(name + "ffn_norm.weight", d),
                                                             requires_grad=False)
        lab_kernels.register_block_layer(layer, qkv, o, gated, down)
    del tensors  # the memory map: every matrix is a copy in tiles now
    left = [name for name, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta]
    if left:
        raise ModelLoadError(f"{Path(gguf_path).name}: no values for {', '.join(left[:3])}")
    if generation_config is not None:
        model.generation_config = generation_config
    return model.eval().requires_grad_(False)


def load_block_parts(name: str, folder: str, fmt: str, device, progress=None) -> tuple:
    """LoadedModel's fields after name and source for a fetchable model run from its GGUF in `fmt` (gguf_files.py:
    fetched, or written from the published file first): (model, tokenizer, device, dtype, seconds to load), its config,
    tokenizer and generation config from its converted folder."""
    import time

    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    from specdec.models.dtypes import block_weights_label
    from specdec.models.gguf_files import block_paths_reason, ensure_gguf

    reason = "not a CPU" if device.type != "cpu" else block_paths_reason(name, folder)
    if reason:
        raise ModelLoadError(f"--dtype {fmt} runs a GGUF's own blocks on the lab's CPU kernels: {reason}")
    started = time.perf_counter()
    gguf = ensure_gguf(name, fmt, progress)
    (progress or (lambda message: None))(f"Loading {name} from {gguf.name} ({block_weights_label(fmt)})…")
    try:
        generation = GenerationConfig.from_pretrained(folder)
    except OSError:
        generation = None
    model = build_block_model(AutoConfig.from_pretrained(folder), gguf, generation)
    return model, AutoTokenizer.from_pretrained(folder), device, torch.float32, time.perf_counter() - started
