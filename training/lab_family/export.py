"""Create Llama models and save them as standard Hugging Face folders."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from training.lab_family.configs import MAX_POSITIONS, ModelShape
from training.lab_family.tokenizer import eos_id, save_tokenizer

TRAINING_RECORD = "training.json"
STORAGE_DTYPE = torch.float16


def build_config(shape: ModelShape, vocab_size: int, eos: int) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.heads,
        head_dim=shape.hidden // shape.heads,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
    )


def create_model(shape: ModelShape, vocab_size: int, eos: int, seed: int) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    model = LlamaForCausalLM(build_config(shape, vocab_size, eos))
    return model.float()


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def generation_config(eos: int) -> GenerationConfig:
    return GenerationConfig(bos_token_id=eos, eos_token_id=eos, pad_token_id=eos,
                            do_sample=False, max_new_tokens=96)


def save_model_folder(model: LlamaForCausalLM, tok: Tokenizer, folder: Path, record: dict) -> None:
    """Weights stored as float16 safetensors; config says float32, so loaders upcast on load."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    model.config.dtype = torch.float32
    state = {k: v.detach().to(STORAGE_DTYPE).contiguous() for k, v in model.state_dict().items()
             if not (model.config.tie_word_embeddings and k == "lm_head.weight")}
    model.save_pretrained(str(folder), state_dict=state, safe_serialization=True)
    generation_config(eos_id(tok)).save_pretrained(str(folder))
    save_tokenizer(tok, folder)
    (folder / TRAINING_RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def load_training_record(folder: Path) -> dict:
    path = Path(folder) / TRAINING_RECORD
    return json.loads(path.read_text()) if path.exists() else {}
