"""Loading shipped zoo weights (assets/drafters/<name>/) and assembling drafters around a loaded target.

The draft model and the early exit are LlamaForCausalLM modules whose embedding, final norm and head
(and, for the early exit, the first L decoder layers) are the target's own modules: shared, not
copied. Only their new layers are stored and counted in param_bytes. They draft through the engine's
static runner (specdec/static_runner.py) with their own KV cache, like any draft model.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
from torch import nn

from .heads import EagleHead, MedusaHeads

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "drafters"
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
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}


class SharedLlama:
    """What ModelDrafter needs (name, param_bytes, new_runner) for a LlamaForCausalLM that shares the
    target's tensors; param_bytes counts only the layers this drafter adds."""

    def __init__(self, name: str, model, own_layers: list[nn.Module], tokenizer=None):
        self.name, self.model, self.own_layers, self.tokenizer = name, model, own_layers, tokenizer
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype

    @property
    def param_bytes(self) -> int:
        """The layers this drafter adds, with the float16 copies the static runner made of them."""
        from ..fp16_weights import weight_bytes

        return sum(weight_bytes(layer) for layer in self.own_layers)

    def new_runner(self, vocab_limit: int, max_length: int, keep_hidden: bool = False):
        from ..backend import HFEagerRunner
        from ..static_runner import StaticLlamaRunner, supports_static

        if supports_static(self.model):
            return StaticLlamaRunner(self.model, vocab_limit, max_length, keep_hidden)
        return HFEagerRunner(self.model, vocab_limit, keep_hidden)


def shared_llama(target_model, layers: list[nn.Module]):
    """A LlamaForCausalLM over `layers` with the target's embedding, rotary table, final norm and head."""
    from transformers import LlamaForCausalLM

    config = copy.deepcopy(target_model.config)
    config.num_hidden_layers = len(layers)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model.model.embed_tokens = target_model.model.embed_tokens
    model.model.norm = target_model.model.norm
    model.model.rotary_emb = target_model.model.rotary_emb
    model.lm_head = target_model.lm_head
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
        layer.load_state_dict({k: v.float() for k, v in _prefixed(tensors, f"layers.{i}.").items()})
        out.append(layer.to(dtype).eval())
    return out


def build_draft_model(target, name: str, folder: Path | None = None):
    from ..drafters.model import ModelDrafter

    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    layers = own_layers(target.model, tensors, meta["layers"], 0)
    model = shared_llama(target.model, layers)
    loaded = SharedLlama(name, model, layers, target.tokenizer)
    if "draft_vocab" in tensors:
        return VocabModelDrafter(loaded, target.real_vocab_size, tensors["draft_vocab"])
    return ModelDrafter(loaded, target.real_vocab_size)


def build_early_exit(target, name: str, folder: Path | None = None):
    from ..drafters.model import ModelDrafter

    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    exit_layer = meta["exit_layer"]
    adapters = own_layers(target.model, tensors, meta["adapter_layers"], exit_layer)
    model = shared_llama(target.model, list(target.model.model.layers[:exit_layer]) + adapters)
    loaded = SharedLlama(name, model, adapters, target.tokenizer)
    if "draft_vocab" in tensors:
        drafter = VocabModelDrafter(loaded, target.real_vocab_size, tensors["draft_vocab"])
    else:
        drafter = ModelDrafter(loaded, target.real_vocab_size)
    drafter.family = "early exit"
    return drafter


def build_medusa(target, name: str, description: str, folder: Path | None = None):
    from .drafters import MedusaDrafter

    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    heads = MedusaHeads(target.model.config, meta["heads"])
    heads.load_state_dict({k: v.float() for k, v in _prefixed(tensors, "heads.").items()})
    return MedusaDrafter(target, target.real_vocab_size, heads, tensors["draft_vocab"], name, description)


def load_eagle_head(config, folder: Path) -> tuple[EagleHead, torch.Tensor]:
    """The EAGLE head saved in folder (float32, eval mode) and its draft vocabulary (ids)."""
    tensors = load_tensors(folder)
    head = EagleHead(config)
    head.load_state_dict({k: v.float() for k, v in _prefixed(tensors, "head.").items()})
    return head.eval(), tensors["draft_vocab"]


def build_eagle(target, name: str, description: str, folder: Path | None = None):
    from .drafters import EagleDrafter

    head, draft_vocab = load_eagle_head(target.model.config, folder or drafter_dir(name))
    return EagleDrafter(target, target.real_vocab_size, head, draft_vocab, name, description)


class VocabModelDrafter:
    """Factory for a ModelDrafter whose proposals are restricted to the draft vocabulary it was trained on
    (the zoo's draft model and early exit learn only those ids' logits: sampled softmax over the draft
    vocabulary). Every other id gets q = 0, which keeps sampling exact (see drafters.py)."""

    def __new__(cls, loaded, vocab_limit: int, draft_vocab: torch.Tensor):
        from ..drafters.base import Proposal
        from ..drafters.model import ModelDrafter
        from ..sampling import probabilities, sample

        class _Drafter(ModelDrafter):
            def __init__(self):
                super().__init__(loaded, vocab_limit)
                ids = draft_vocab[draft_vocab < vocab_limit].long()
                self.mask = torch.full((vocab_limit,), float("-inf"), device=loaded.device)
                self.mask[ids] = 0.0

            def propose(self, seq, k, context):
                ids, rows = [], []
                logits = self.runner.forward(seq[self.runner.length:])[-1:]
                for i in range(k):
                    if i:
                        logits = self.runner.forward([ids[-1]])
                    logits = logits + self.mask
                    q = probabilities(logits, context.warpers) if context.sampling else torch.softmax(logits, dim=-1)
                    token = sample(q[0], context.generator) if context.sampling else int(logits[0].argmax())
                    rows.append(q)
                    ids.append(token)
                    if context.stop_below is not None and float(q[0].max()) < context.stop_below:
                        break
                return Proposal(ids, torch.cat(rows))

        return _Drafter()
