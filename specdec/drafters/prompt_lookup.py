"""Prompt lookup: propose the tokens that followed the last n-gram's earliest earlier occurrence
in prompt + output (as transformers' `prompt_lookup_num_tokens`, vLLM's `ngram`).

q is one-hot at each proposed token, so the general verification rule gives: accept d with
probability p(d); on rejection draw from p with d removed, renormalised. Exact under sampling.
"""
from __future__ import annotations

from specdec.drafters.base import CostShape, Drafter, DrafterSpec, Proposal, ProposalContext, one_hot_rows

DEFAULT_MAX_NGRAM = 2  # transformers' max_matching_ngram_size default


def find_continuation(seq: list[int], k: int, max_ngram: int = DEFAULT_MAX_NGRAM) -> list[int]:
    """The first (leftmost) earlier match of the longest suffix n-gram (n = max_ngram .. 1) that has a
    non-empty continuation; up to k tokens of that continuation. [] when nothing matches."""
    length = len(seq)
    for n in range(min(max_ngram, length - 1), 0, -1):
        suffix = seq[-n:]
        for start in range(0, length - n):
            if seq[start : start + n] == suffix:
                return seq[start + n : min(start + n + k, length)]
    return []


class PromptLookupDrafter(Drafter):
    name = "prompt-lookup"
    family = "prompt lookup"
    description = ("copies what followed the last 2 tokens earlier in the prompt or output: no network, "
                   "no memory, wins when the answer repeats its input (rewrites, edits, code)")

    def __init__(self, vocab_limit: int, device, max_ngram: int = DEFAULT_MAX_NGRAM):
        super().__init__(vocab_limit)
        self.device, self.max_ngram = device, max_ngram

    def propose(self, seq: list[int], k: int, context: ProposalContext) -> Proposal:
        ids = find_continuation(seq, k, self.max_ngram)
        return Proposal(ids, one_hot_rows(ids, self.vocab_limit, self.device) if ids else None)


    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        return [DrafterSpec(
            name=cls.name, drafter=cls, description=cls.description, build=_build, title="Prompt lookup",
            summary="finds the last few generated tokens earlier in the prompt and proposes what followed them "
                    "there (no weights)",
            diagram="last n-gram ──▶ match in prompt + output so far ──▶ the K tokens after the match (or none)",
            note="Costs almost nothing; pays on text that copies its prompt (rewriting, code edits), drafts nothing "
                 "elsewhere.")]

    @classmethod
    def cost_shape(cls, spec: DrafterSpec, meta: dict, hidden: int) -> CostShape:
        """A search through the token ids: nothing the model prices."""
        return CostShape(network=False)


def _build(target, load_model) -> PromptLookupDrafter:
    return PromptLookupDrafter(target.real_vocab_size, target.device)
