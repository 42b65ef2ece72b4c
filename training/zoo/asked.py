"""Instructions the target writes itself ("asked"): a wider sample of how people ask than prompts.py's templates.

SmolLM2-135M-Instruct was tuned on conversations, so started at an empty user turn of its own chat template and
sampled, it writes user requests: questions, plans, recipes, stories to continue, code to write, in the words people
use (docs/zoo.md, "Instructions the target asks itself"). The templated data reaches 40 ways of asking over a fixed
topic list; a head trained on it drafts held-out chat markedly worse than chat it has seen. These instructions are
the lever that data lacked: more kinds of asking and more topics.

Kept: turns the model ends itself (its end-of-turn token within ``max_new_tokens``), of 3 to 80 words, that mention
no held-out topic or coding task and use no held-out template's wording (``mentions_held_out``), deduplicated. The
held-out prompts stay unseen in kind of asking and in topic, as for the templated data.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from training.zoo.prompts import (
    HELDOUT_CHAT_TEMPLATES,
    HELDOUT_CHAT_TOPICS,
    HELDOUT_CODE_TASKS,
    HELDOUT_CODE_TEMPLATES,
    _split,
)

# words a held-out topic or task shares with many others: not what makes it that topic
_COMMON = {"the", "a", "an", "of", "in", "for", "to", "and", "from", "with", "without", "using", "whether", "is",
           "returns", "checks", "computes", "counts", "converts", "finds", "two", "as", "list", "number", "numbers",
           "string", "title()"}


def _stems(phrase: str) -> list[str]:
    """A phrase's distinctive words, cut to at most six letters (and one short of plurals' s): 'octopuses' ->
    'octopu', 'bats' -> 'bat'."""
    words = [w.strip(".,()?").lower() for w in phrase.split()]
    words = [w for w in words if w and w not in _COMMON]
    return [w[: max(3, len(w) - 1)][:6] for w in words]


def _template_phrases() -> list[str]:
    """The fixed wording of each held-out template: its longest run of words around the slot."""
    phrases = []
    for template in HELDOUT_CHAT_TEMPLATES + HELDOUT_CODE_TEMPLATES:
        parts = [p.strip(" ,.?").lower() for p in re.split(r"\{\w\}", template)]
        phrases.append(max(parts, key=len))
    return phrases


_HELD_OUT_STEMS = [_stems(t) for t in _split(HELDOUT_CHAT_TOPICS) + _split(HELDOUT_CODE_TASKS)]
_HELD_OUT_PHRASES = _template_phrases()


def mentions_held_out(text: str) -> bool:
    """Whether ``text`` names a held-out topic or coding task (each of its distinctive words begins some word of the
    text) or uses a held-out template's fixed wording. Errs towards yes: a false match only drops a prompt."""
    lowered = text.lower()
    words = re.findall(r"[a-z0-9]+", lowered)
    for stems in _HELD_OUT_STEMS:
        if stems and all(any(w.startswith(s) for w in words) for s in stems):
            return True
    return any(phrase in lowered for phrase in _HELD_OUT_PHRASES)


def is_kept(text: str) -> bool:
    """A finished user turn worth answering: 3 to 80 words, no held-out topic, task or template wording."""
    return 3 <= len(text.split()) <= 80 and not mentions_held_out(text)


def user_turn_ids(tokenizer) -> list[int]:
    """The chat template up to the start of a user's words (its default system turn, then the user's header)."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": "\x00"}], tokenize=False)
    return tokenizer(text[: text.index("\x00")], add_special_tokens=False)["input_ids"]


@torch.no_grad()
def write_instructions(model, tokenizer, n: int, *, seed: int = 0, batch_size: int = 96, max_new_tokens: int = 72,
                       top_p: float = 0.95, max_batches: int = 200, log=print) -> list[str]:
    """``n`` kept instructions (``is_kept``), sampled from the target at T = 1 with top-p ``top_p``, batch b drawn
    with seed ``seed * 100003 + b``: the same list for the same model, seed and settings."""
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    prefix = torch.tensor([user_turn_ids(tokenizer)])
    kept, seen = [], set()
    for b in range(max_batches):
        torch.manual_seed(seed * 100003 + b)
        ids = prefix.repeat(batch_size, 1)
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0, top_p=top_p,
                             top_k=0, max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=eos)
        for row in out[:, prefix.shape[1]:].tolist():
            if eos not in row:
                continue  # not finished within max_new_tokens
            text = tokenizer.decode(row[: row.index(eos)]).strip()
            if is_kept(text) and text not in seen:
                seen.add(text)
                kept.append(text)
        log(f"asked: batch {b + 1}, {len(kept)} of {n} instructions kept of {(b + 1) * batch_size} written")
        if len(kept) >= n:
            return kept[:n]
    raise RuntimeError(f"only {len(kept)} of {n} instructions kept after {max_batches} batches of {batch_size}")


def asked_prompts(model, tokenizer, work: Path, n: int, *, seed: int = 0, log=print) -> list[tuple[str, str]]:
    """The profile's ``n`` asked instructions as (kind "asked", text), written once and kept in work/asked.json."""
    path = Path(work) / "asked.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    if (saved.get("n"), saved.get("seed")) == (n, seed):
        texts = saved["instructions"]
    else:
        texts = write_instructions(model, tokenizer, n, seed=seed, log=log)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"n": n, "seed": seed, "instructions": texts}, indent=1))
    return [("asked", text) for text in texts]
