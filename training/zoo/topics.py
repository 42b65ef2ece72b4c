"""Topics from the target's own vocabulary: thousands of chat topics where prompts.py's lists hold about 200.

Why (docs/zoo.md, "What the first guess misses"): an EAGLE-3 head trained on the templated data agrees with the
target's confident choices (top-1 probability >= 0.9) 95% of the time on chat about topics it trained on, in
templates it did not, and 76-80% of the time on held-out topics, whatever the template. What it lacks is topics,
not ways of asking. The tokenizer's whole-word tokens are a list of English words no hub is needed for.

A candidate is a token of a space and 5+ lowercase letters, past the first ``skip_ids`` ids (BPE's most frequent
merges: mostly function words), with no adverb/verb/adjective ending (``_NOT_A_TOPIC``), naming no held-out topic
(asked.mentions_held_out). It is kept if the target, after "... a list of topics: <word>", ends the word rather than
continues it (probability of a next token that starts with a letter and no space below ``max_continuation``): that
drops BPE fragments such as "includ" or "careg".
"""
from __future__ import annotations

import re

import torch

from training.zoo.asked import mentions_held_out

_NOT_A_TOPIC = re.compile(r"(ly|ing|ed|ous|ive|ful|able|ible|less|est|ize|ise|ate|ic|al|ish|ward|wise|ever|ould|ight)$")
_CONTEXT = "Here is a list of topics for a school project: {w}"


def candidate_words(tokenizer, skip_ids: int) -> list[str]:
    """Whole-word tokens that may name a topic (before the target's check), in id order."""
    words = []
    for token_id in range(skip_ids, tokenizer.vocab_size):
        token = tokenizer.convert_ids_to_tokens(token_id)
        if token.startswith("Ġ") and re.fullmatch(r"[a-z]{5,}", token[1:]):
            word = token[1:]
            if not _NOT_A_TOPIC.search(word) and not mentions_held_out(word):
                words.append(word)
    return words


@torch.no_grad()
def continuation_probability(model, tokenizer, words: list[str], batch_size: int = 256) -> torch.Tensor:
    """[len(words)] the target's probability that the token after ``word`` (in _CONTEXT) continues the word."""
    vocab = tokenizer.convert_ids_to_tokens(list(range(tokenizer.vocab_size)))
    continues = torch.tensor([bool(re.match(r"[A-Za-z]", t)) for t in vocab])  # no space mark: same word
    out = []
    for start in range(0, len(words), batch_size):
        rows = [tokenizer(_CONTEXT.format(w=w), add_special_tokens=False)["input_ids"] for w in
                words[start:start + batch_size]]
        width = max(map(len, rows))  # left padding, so the last column is every row's last token
        ids = torch.tensor([[tokenizer.eos_token_id] * (width - len(r)) + r for r in rows])
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        logits = model(ids, attention_mask=mask).logits[:, -1, : tokenizer.vocab_size].float()
        out.append(torch.softmax(logits, -1)[:, continues].sum(-1))
    return torch.cat(out)


def vocabulary_topics(model, tokenizer, *, skip_ids: int = 2000, max_continuation: float = 0.2) -> list[str]:
    """The kept words (module docstring), in id order: deterministic for a model and tokenizer."""
    words = candidate_words(tokenizer, skip_ids)
    keep = continuation_probability(model, tokenizer, words) < max_continuation
    return [w for w, k in zip(words, keep.tolist()) if k]
