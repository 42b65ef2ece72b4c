"""Loading shipped zoo weights (assets/drafters/<name>/) and assembling drafters around a loaded target.

The draft model and the early exit are LlamaForCausalLM modules whose embedding and final norm (and, for
the early exit, the first L decoder layers) are the target's own modules: shared, not copied. Their head
is a copy of the target's head rows of their draft vocabulary. Only their new layers are stored;
param_bytes counts them and the head rows. They draft through the engine's static runner
(specdec/runners/static.py) with their own KV cache, like any draft model.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

from specdec.drafters.heads import EagleHead, MedusaHeads, load_eagle_state
from specdec.paths import SHIPPED_DRAFTERS_DIR

import torch
from torch import nn

ASSETS = SHIPPED_DRAFTERS_DIR
TARGET = "smollm2-135m-instruct"


def drafter_dir(name: str) -> Path:
    return ASSETS / name


def read_meta(folder: Path) -> dict:
    return json.loads((Path(folder) / "zoo.json").read_text())


def load_tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(Path(folder) / "model.safetensors"))


def save_tensors(folder: Path, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: (v.detach().to(torch.bfloat16) if v.is_floating_point() else v.detach()).contiguous()
               for k, v in tensors.items()},
              str(folder / "model.safetensors"))
    (folder / "model.safetensors").chmod(0o644)  # save_file creates it owner-only
    (folder / "zoo.json").write_text(json.dumps(meta, indent=1) + "\n")


def _prefixed(tensors: dict, prefix: str) -> dict:
    """The tensors under `prefix`, renamed without it, as float32 tensors of float16 values (float16_valued)."""
    return {k[len(prefix):]: float16_valued(v) for k, v in tensors.items() if k.startswith(prefix)}


def float16_valued(stored: torch.Tensor) -> torch.Tensor:
    """A stored bfloat16 weight as float32 holding the nearest float16 values. bfloat16 keeps 8 significant
    bits, float16 11, so only weights below float16's normal range (|w| < 6.1e-5: ~1e-4 of the zoo's) lose
    bits; in exchange every matrix is exact in float16 and a float32 run multiplies it through its float16
    copy (packed_weights.py), as the target's are: on the AMD EPYC MKL's float32 products of these matrices
    took ~155 us each on average, their float16 copies ~70 (docs/zoo.md, "Loading")."""
    return stored.to(torch.float16).float()


class SharedLlama:
    """What ModelDrafter needs (name, param_bytes, new_runner) for a LlamaForCausalLM that shares the
    target's tensors; param_bytes counts only the modules this drafter adds."""

    def __init__(self, name: str, model, own_modules: list[nn.Module], tokenizer=None):
        self.name, self.model, self.own_modules, self.tokenizer = name, model, own_modules, tokenizer
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype

    @property
    def param_bytes(self) -> int:
        """The modules this drafter adds, with the float16 copies the static runner made of them."""
        from specdec.runners.packed_weights import weight_bytes

        return sum(weight_bytes(module) for module in self.own_modules)

    def new_runner(self, vocab_limit: int, max_length: int, keep_hidden: bool = False):
        from specdec.runners.backend import HFEagerRunner
        from specdec.runners.static import StaticLlamaRunner, supports_static

        if supports_static(self.model):
            return StaticLlamaRunner(self.model, vocab_limit, max_length, keep_hidden)
        return HFEagerRunner(self.model, vocab_limit, keep_hidden)


def shared_llama(target_model, layers: list[nn.Module], head: nn.Module | None = None):
    """A LlamaForCausalLM over `layers` with the target's embedding, rotary table, final norm and head
    (or `head`, e.g. the target's head rows of a draft vocabulary)."""
    from transformers import LlamaForCausalLM

    config = copy.deepcopy(target_model.config)
    config.num_hidden_layers = len(layers)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model.model.embed_tokens = target_model.model.embed_tokens
    model.model.norm = target_model.model.norm
    model.model.rotary_emb = target_model.model.rotary_emb
    model.lm_head = target_model.lm_head if head is None else head
    model.model.layers = nn.ModuleList(layers)
    model.eval()
    return model


def own_layers(target_model, tensors: dict, count: int, first_index: int) -> list[nn.Module]:
    """`count` new decoder layers (weights under 'layers.i.') in the target's dtype."""
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    dtype = next(target_model.parameters()).dtype
    out = []
    for i in range(count):
        layer = LlamaDecoderLayer(target_model.config, layer_idx=first_index + i)
        layer.load_state_dict(_prefixed(tensors, f"layers.{i}."))
        out.append(layer.to(dtype).eval())
    return out


def _vocab_drafter(target, name: str, layers: list[nn.Module], own: list[nn.Module], tensors: dict):
    """The drafter over `layers` (own: the ones it adds), ending in the head rows of its draft vocabulary."""
    from specdec.drafters.draft_model import ModelDrafter
    from specdec.drafters.head_drafters import DraftVocabModelDrafter, head_rows_module, vocab_ids

    if "draft_vocab" not in tensors:
        model = shared_llama(target.model, layers)
        return ModelDrafter(SharedLlama(name, model, own, target.tokenizer), target.real_vocab_size)
    ids = vocab_ids(tensors["draft_vocab"], target.real_vocab_size)
    head = head_rows_module(target.model, ids, next(target.model.parameters()).dtype)
    model = shared_llama(target.model, layers, head)
    return DraftVocabModelDrafter(SharedLlama(name, model, own + [head], target.tokenizer),
                                  target.real_vocab_size, ids)


def build_draft_model(target, name: str, description: str, folder: Path | None = None):
    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    layers = own_layers(target.model, tensors, meta["layers"], 0)
    drafter = _vocab_drafter(target, name, layers, layers, tensors)
    drafter.family, drafter.description = "draft model", description
    return drafter


def build_early_exit(target, name: str, description: str, folder: Path | None = None):
    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    exit_layer = meta["exit_layer"]
    adapters = own_layers(target.model, tensors, meta["adapter_layers"], exit_layer)
    drafter = _vocab_drafter(target, name, list(target.model.model.layers[:exit_layer]) + adapters, adapters,
                             tensors)
    drafter.family, drafter.description = "early exit", description
    return drafter


def build_medusa(target, name: str, description: str, folder: Path | None = None):
    from specdec.drafters.head_drafters import MedusaDrafter

    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    heads = MedusaHeads(target.model.config, meta["heads"])
    heads.load_state_dict(_prefixed(tensors, "heads."))
    return MedusaDrafter(target, target.real_vocab_size, heads, tensors["draft_vocab"], name, description)


def load_eagle_head(config, folder: Path) -> tuple[EagleHead, torch.Tensor]:
    """The EAGLE (or EAGLE-3: zoo.json's feature_layers) head saved in folder (float32 of float16 values, eval
    mode) and its draft vocabulary (ids)."""
    tensors = load_tensors(folder)
    return eagle_head_from(config, tensors, read_meta(folder)), tensors["draft_vocab"]


def eagle_head_from(config, tensors: dict, meta: dict) -> EagleHead:
    """The head in a zoo entry's tensors ('head.*') and zoo.json `meta`, as load_eagle_head gives it."""
    head = EagleHead(config, meta.get("layers", 1), tuple(meta.get("feature_layers", ())),
                     meta.get("intermediate_size"), meta.get("input_layout", "fc"))
    head.load_state_dict(load_eagle_state(_prefixed(tensors, "head.")))
    return head.eval()


def build_eagle(target, name: str, description: str, folder: Path | None = None):
    from specdec.drafters.head_drafters import EagleDrafter

    head, draft_vocab = load_eagle_head(target.model.config, folder or drafter_dir(name))
    return EagleDrafter(target, target.real_vocab_size, head, draft_vocab, name, description)
