"""Draft model: a separate, smaller network that shares the target's tokenizer, drafting autoregressively with
its own KV cache through a model runner. Any model name with the target's tokenizer becomes one (registry); the
family also ships `smollm2-135m-draft`, 2 own decoder layers on the target's embedding, norm and the head rows
of its draft vocabulary (SharedLlama: the target's tensors are shared, not copied).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Optional

from specdec.drafters.base import CostShape, Drafter, DrafterSpec, Proposal, ProposalContext, rehearse
from specdec.drafters.draft_vocab import draw, head_rows_module, vocab_ids
from specdec.drafters.shipped import draft_vocab_rows, drafter_dir, load_tensors, prefixed, read_meta, shipped_spec
from specdec.engine.sampling import probabilities, sample

import torch
from torch import nn

SHIPPED = "smollm2-135m-draft"


class ModelDrafter(Drafter):
    """Drafts autoregressively with its own KV cache (a runner from backend.py / static_runner.py).

    `loaded` is a LoadedModel (or anything with name, param_bytes and new_runner(vocab_limit, max_length)).
    """

    family = "draft model"
    description = "a smaller model with the target's tokenizer: its own weights and its own KV cache"

    def __init__(self, loaded, vocab_limit: int):
        super().__init__(vocab_limit)
        self.loaded = loaded
        self.name = loaded.name

    @property
    def model(self):
        """The draft network (transformers' assisted generation takes it as assistant_model)."""
        return self.loaded.model

    @property
    def runner_kind(self) -> str:
        return self.loaded.runner_kind

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        self.runner = self.loaded.new_runner(self.vocab_limit, max_length)
        self.runner.prefill(prompt_ids[:-1])

    def propose(self, seq: list[int], k: int, context: ProposalContext) -> Proposal:
        ids, rows = [], []
        logits = self.runner.forward(seq[self.runner.length:])[-1:]  # feed what the draft has not seen yet
        for i in range(k):
            if i:
                logits = self.runner.forward([ids[-1]])
            q, token = self.draw(logits, context)
            rows.append(q)
            ids.append(token)
            if context.unsure(q[0]):
                break
        return Proposal(ids, torch.cat(rows))

    def draw(self, logits: torch.Tensor, context: ProposalContext) -> tuple[torch.Tensor, int]:
        """The q row [1, V] and the drafted id from the network's logits of one position [1, V]."""
        q = probabilities(logits, context.warpers) if context.sampling else torch.softmax(logits, dim=-1)
        token = sample(q[0], context.generator) if context.sampling else int(logits[0].argmax())
        return q, token

    def rollback(self, keep: int) -> None:
        self.runner.rollback(min(self.runner.length, keep))

    def warm_up(self) -> None:
        """A throwaway proposal through a runner of its own (base.rehearse): the runner's first forward, and its
        weights' packed copies, happen at load."""
        rehearse(self)

    def param_bytes(self) -> int:
        return self.loaded.param_bytes

    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        return [shipped_spec(
            DraftVocabModelDrafter, SHIPPED, "draft model",
            "2 own decoder layers on the target's embedding and head (14 MB); reads only tokens; costs 2 layers + "
            "a 12k-token head per drafted token",
            "tokens ──▶ target embedding ──▶ 2 own layers ──▶ target norm + head rows ──▶ x̂₁, then x̂₁ ──▶ … x̂_K",
            build_draft_model)]

    @classmethod
    def cost_shape(cls, spec: DrafterSpec, meta: dict, hidden: int) -> CostShape:
        """Its own layers, then the draft-vocabulary head rows."""
        return CostShape(layers=meta["layers"], head_rows=draft_vocab_rows(meta))


class DraftVocabModelDrafter(ModelDrafter):
    """A ModelDrafter whose network ends in the target's head rows of its draft vocabulary (the shipped draft
    model and early exit learn only those ids' logits: sampled softmax over the draft vocabulary), so each draft
    token pays for Vd head rows instead of the whole vocabulary. Every other id has q = 0. Without a draft
    vocabulary (ids None) it is a plain ModelDrafter over the target's head."""

    def __init__(self, loaded, vocab_limit: int, ids: Optional[torch.Tensor]):
        super().__init__(loaded, vocab_limit)
        self.ids = ids  # [Vd]: column j of the network's logits is token ids[j]

    @property
    def model(self):
        """None with a draft vocabulary: the network's logits cover it only, which transformers' assisted
        generation cannot take as an assistant (so bench has no transformers counterpart for it)."""
        return None if self.ids is not None else self.loaded.model

    def draw(self, logits: torch.Tensor, context: ProposalContext) -> tuple[torch.Tensor, int]:
        """logits [1, Vd] over the draft vocabulary -> the q row [1, vocab_limit] and the drafted id."""
        if self.ids is None:
            return super().draw(logits, context)
        q, tokens = draw(logits, self.ids, self.vocab_limit, context)
        return q, tokens[0]


class SharedLlama:
    """What ModelDrafter needs (name, param_bytes, new_runner) for a LlamaForCausalLM that shares the
    target's tensors; param_bytes counts only the modules this drafter adds."""

    def __init__(self, name: str, model, own_modules: list[nn.Module], tokenizer=None, kernels: str = "torch"):
        self.name, self.model, self.own_modules, self.tokenizer = name, model, own_modules, tokenizer
        self.kernels = kernels  # the target's measured CPU kernels ("torch" or "lab"), which the shared layers run on
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype

    @property
    def param_bytes(self) -> int:
        """The modules this drafter adds, with the float16 copies the static runner made of them."""
        from specdec.runners.block_weights import held_bytes

        return sum(held_bytes(module) for module in self.own_modules)

    def new_runner(self, vocab_limit: int, max_length: int, keep_hidden: bool = False):
        from specdec.runners.selection import select

        return select(self.model, vocab_limit, max_length, keep_hidden, name=self.name, kernels=self.kernels)


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
        layer.load_state_dict(prefixed(tensors, f"layers.{i}."))
        out.append(layer.to(dtype).eval())
    return out


def vocab_drafter(drafter: type, target, name: str, description: str, layers: list[nn.Module],
                  own: list[nn.Module], tensors: dict) -> DraftVocabModelDrafter:
    """A `drafter` (DraftVocabModelDrafter or a subclass) over `layers` (own: the ones it adds), ending in the
    head rows of its draft vocabulary where the tensors hold one."""
    ids = vocab_ids(tensors["draft_vocab"], target.real_vocab_size) if "draft_vocab" in tensors else None
    head = head_rows_module(target.model, ids, next(target.model.parameters()).dtype, blocks=True) \
        if ids is not None else None
    model = shared_llama(target.model, layers, head)
    built = drafter(SharedLlama(name, model, own + ([head] if head is not None else []), target.tokenizer,
                                getattr(target, "kernels", "torch")),
                    target.real_vocab_size, ids)
    built.description = description
    return built


def build_draft_model(target, name: str, description: str, folder: Path | None = None) -> DraftVocabModelDrafter:
    folder = folder or drafter_dir(name)
    meta, tensors = read_meta(folder), load_tensors(folder)
    layers = own_layers(target.model, tensors, meta["layers"], 0)
    return vocab_drafter(DraftVocabModelDrafter, target, name, description, layers, layers, tensors)


def as_drafter(target, draft) -> Drafter | None:
    """None, a Drafter, or a LoadedModel (the draft-model drafter; its tokenizer must match)."""
    if draft is None or isinstance(draft, Drafter):
        return draft
    from specdec.models.vocabulary import check_compatible, shared_vocab_size

    check_compatible(target, draft)
    return ModelDrafter(draft, shared_vocab_size(target, draft))
