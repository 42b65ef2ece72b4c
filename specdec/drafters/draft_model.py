"""A separate draft network that shares the target's tokenizer, run through a model runner."""
from __future__ import annotations

from specdec.drafters.base import Drafter, Proposal, ProposalContext
from specdec.engine.sampling import probabilities, sample

import torch


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

    def param_bytes(self) -> int:
        return self.loaded.param_bytes


def as_drafter(target, draft) -> Drafter | None:
    """None, a Drafter, or a LoadedModel (the draft-model drafter; its tokenizer must match)."""
    if draft is None or isinstance(draft, Drafter):
        return draft
    from specdec.models.vocabulary import check_compatible, shared_vocab_size

    check_compatible(target, draft)
    return ModelDrafter(draft, shared_vocab_size(target, draft))
