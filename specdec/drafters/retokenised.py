"""A draft model with a different tokenizer (transformers' "universal assisted generation").

Each step the target's tokens are turned into text, the text into the draft's tokens; the draft
continues greedily in its own vocabulary, and its new text is tokenised with the target's tokenizer
to become the proposal. The proposal is deterministic (one-hot q), but q is not the draft model's
distribution over the target's vocabulary, so only greedy decoding is offered: sampling would need
the exact cross-vocabulary law. Greedy output stays identical to the target's alone.
"""
from __future__ import annotations

import itertools

from specdec.drafters.base import Drafter, Proposal, ProposalContext, one_hot_rows, rehearse

CONTEXT_FACTOR = 4  # the draft's tokens per target token can exceed 1; its cache gets this much room


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


class ReTokenisedDrafter(Drafter):
    family = "re-tokenised"
    greedy_only = True

    def __init__(self, target, draft):
        super().__init__(target.real_vocab_size)
        self.target, self.draft = target, draft
        self.name = draft.name
        self.description = (f"{draft.name} drafts in its own vocabulary; its text is re-tokenised for "
                            f"{target.name} (greedy only)")
        self.fed, self.capacity = [], 0

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        self.capacity = max_length * CONTEXT_FACTOR
        self.runner = self.draft.new_runner(self.draft.real_vocab_size, self.capacity)
        self.fed = []

    def propose(self, seq: list[int], k: int, context: ProposalContext) -> Proposal:
        if context.sampling:
            raise ValueError("a re-tokenised draft supports greedy decoding only")
        text = self.target.tokenizer.decode(seq, skip_special_tokens=False)
        wanted = self.draft.tokenizer(text, add_special_tokens=False)["input_ids"]
        if not wanted or len(wanted) + k + 1 > self.capacity:
            return Proposal()
        keep = min(common_prefix(self.fed, wanted), len(wanted) - 1)  # re-feed at least one token
        self.runner.rollback(keep)
        logits = self.runner.forward(wanted[keep:])[-1:]
        self.fed = list(wanted)
        new = []
        for i in range(k):
            if i:
                logits = self.runner.forward([new[-1]])
            new.append(int(logits[0].argmax()))
        self.fed += new[:-1]  # the last drafted token was never fed
        draft_text = self.draft.tokenizer.decode(new, skip_special_tokens=False)
        ids = self.target.tokenizer(draft_text, add_special_tokens=False)["input_ids"][:k]
        ids = list(itertools.takewhile(lambda i: i < self.vocab_limit, ids))
        return Proposal(ids, one_hot_rows(ids, self.vocab_limit, self.target.device) if ids else None)

    def warm_up(self) -> None:
        """A throwaway proposal through a runner of its own (base.rehearse), both tokenizers included."""
        rehearse(self)

    def param_bytes(self) -> int:
        return self.draft.param_bytes
