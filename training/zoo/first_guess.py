"""An EAGLE head's first guess at every position of a target's answer, teacher-forced: where chains lose tokens.

The first draft of every chain step is the head's guess at the token after next from the target's features of a
position and the token the target chose after it. Teacher forcing computes that guess for every position of an
answer in one pass of the head, so a head is compared with the target on every answer token instead of only where
decoding happened to start a step (experiments/measure_first_guess.py; docs/zoo.md, "What the first guess misses").
"""
from __future__ import annotations

from dataclasses import dataclass

from specdec.drafters.heads import EagleHead, rope_tables

import torch
import torch.nn.functional as F

from training.zoo.train import first_positions, usable_by_row


@dataclass
class TargetPass:
    """A prompt and the target's greedy answer, read once by the target (teacher forcing)."""

    ids: torch.Tensor  # [T] prompt then answer
    states: torch.Tensor  # [T, m*d] the residual stream after each requested layer, concatenated
    top_id: torch.Tensor  # [T] the target's greedy choice for the token after each position
    top_p: torch.Tensor  # [T] its probability (the target's confidence there)
    prompt_length: int


@torch.no_grad()
def target_pass(model, prompt: list[int], new_tokens: int, layers: tuple[int, ...]) -> TargetPass:
    """The target's greedy answer of up to ``new_tokens`` tokens to ``prompt``, then one pass over both."""
    ids = torch.tensor([prompt])
    answer = model.generate(ids, max_new_tokens=new_tokens, do_sample=False, attention_mask=torch.ones_like(ids))
    out = model(answer, output_hidden_states=True)
    top_p, top_id = torch.softmax(out.logits[0].float(), dim=-1).max(-1)
    states = torch.cat([out.hidden_states[i][0] for i in layers], dim=-1).float()
    return TargetPass(answer[0], states, top_id, top_p, len(prompt))


def vocabulary_by_position(draft_vocab: torch.Tensor, ids: torch.Tensor, vocab_size: int,
                           follow_context: bool = True) -> torch.Tensor:
    """[T - 1, vocab_size] bool: row p, the ids a drafter can draft as token p + 2: its draft vocabulary and, as the
    drafters' vocabulary follows the text (drafters._HeadRows), every id among tokens 0 .. p + 1. ids [T]."""
    in_draft_vocab = torch.zeros(vocab_size, dtype=torch.bool)
    in_draft_vocab[draft_vocab] = True
    if not follow_context:
        return in_draft_vocab.expand(len(ids) - 1, vocab_size)
    return usable_by_row(first_positions(ids[None], vocab_size), in_draft_vocab, len(ids) - 1)[0]


@torch.no_grad()
def first_guesses(model, head: EagleHead, draft_vocab: torch.Tensor, ids: torch.Tensor, states: torch.Tensor,
                  follow_context: bool = True) -> torch.Tensor:
    """[T - 1] target ids: row p is the head's guess at token p + 2 from (feature p, token p + 1), as training's
    depth 0 and a chain step's first draft compute it, over the ids it can draft there (vocabulary_by_position).
    ids [T], states [T, m*d] (the layers head.feature_layers)."""
    emb = model.get_input_embeddings().weight.float()
    rows = model.get_output_embeddings().weight.float()  # [V, d]
    head = head.float()
    x = head.inputs(head.fused(states[None, :-1]), F.embedding(ids[None, 1:], emb))
    cos, sin = rope_tables(model.config, x.shape[1], torch.float32)
    logits = F.linear(head.norm(head.forward_sequences(x, cos[None], sin[None]))[0], rows)  # [T - 1, V]
    allowed = vocabulary_by_position(draft_vocab, ids, len(rows), follow_context)
    return logits.masked_fill(~allowed, float("-inf")).argmax(-1)


def agreement(model, head: EagleHead, draft_vocab: torch.Tensor, seen: TargetPass,
              follow_context: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per answer position after the first (the first is the target's own, from the prompt's pass): whether the
    head's first guess is the target's choice [n] bool, the target's top-1 probability there [n], and whether that
    choice is one the head could draft there at all [n] bool (vocabulary_by_position)."""
    guess = first_guesses(model, head, draft_vocab, seen.ids, seen.states, follow_context)
    allowed = vocabulary_by_position(draft_vocab, seen.ids, model.get_output_embeddings().weight.shape[0],
                                     follow_context)
    q = torch.arange(seen.prompt_length + 1, len(seen.ids))  # token q: chosen at q - 1, guessed by row q - 2
    chosen = seen.top_id[q - 1]
    return guess[q - 2] == chosen, seen.top_p[q - 1], allowed[q - 2, chosen]


def choice_kinds(tokenizer, seen: TargetPass) -> list[str]:
    """Per answer position after the first (agreement's order), what the target chose there: "continuation" (a piece
    inside a word: it starts with a letter and the token before it ends with one) or "start" (any other), and whether
    the text held that id before: "/prompt", "/answer" (earlier in the answer only) or "/new". Held-out topics are
    spelt in pieces the head never saw completed (docs/zoo.md, "Where the confident misses are")."""
    ids = seen.ids.tolist()
    prompt = set(ids[: seen.prompt_length])
    kinds = []
    for q in range(seen.prompt_length + 1, len(ids)):
        chosen = int(seen.top_id[q - 1])
        inside = tokenizer.decode([chosen])[:1].isalpha() and tokenizer.decode([ids[q - 1]])[-1:].isalpha()
        where = "/prompt" if chosen in prompt else "/answer" if chosen in ids[seen.prompt_length:q] else "/new"
        kinds.append(("continuation" if inside else "start") + where)
    return kinds
