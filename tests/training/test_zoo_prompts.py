"""The zoo's training instructions: held-out prompts stay unseen, the chat mix, and which prompts a profile's data
answered greedily (training/zoo/prompts.py, training/zoo/data.py)."""
import hashlib
import json
from collections import Counter

import pytest

from training.zoo.data import plan_batches, trained_greedy_prompts
from training.zoo.prompts import (
    CHAT_TEMPLATES,
    HELDOUT_CHAT_TEMPLATES,
    HELDOUT_CHAT_TOPICS,
    MORE_CHAT_TEMPLATES,
    build_prompts,
    default_corpus,
    heldout_prompts,
)


@pytest.fixture(scope="module")
def corpus():
    return default_corpus()


class CharTokenizer:
    """One id per character, the instruction alone as the "chat template"."""

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        return [ord(c) for c in messages[0]["content"]]


def test_the_default_training_prompts_are_those_the_shipped_heads_were_trained_on(corpus):
    prompts = build_prompts("train", 6000, corpus=corpus)
    digest = hashlib.sha256(json.dumps(prompts).encode()).hexdigest()[:16]
    assert (len(prompts), digest) == (4242, "3133c4d65dc2fa60")


def test_the_chat_mix_is_three_quarters_chat(corpus):
    kinds = Counter(kind for kind, _ in build_prompts("train", 4000, corpus=corpus, mix="chat"))
    assert 0.65 < kinds["chat"] / sum(kinds.values()) < 0.8
    assert kinds["code"] > 0 and kinds["rewrite"] > 0


def test_the_chat_mix_draws_from_the_added_templates(corpus):
    chat = [text for kind, text in build_prompts("train", 4000, corpus=corpus, mix="chat") if kind == "chat"]
    openings = [t.split("{t}")[0] for t in MORE_CHAT_TEMPLATES if not t.startswith("{t}")]
    assert any(text.startswith(opening) for text in chat for opening in openings if opening)


def test_no_training_template_is_a_held_out_one():
    assert not set(CHAT_TEMPLATES + MORE_CHAT_TEMPLATES) & set(HELDOUT_CHAT_TEMPLATES)


@pytest.mark.parametrize("mix", ["default", "chat"])
def test_training_prompts_never_name_a_held_out_topic(mix, corpus):
    held = [t.strip() for t in HELDOUT_CHAT_TOPICS.split(";")]
    chat = [text for kind, text in build_prompts("train", 3000, corpus=corpus, mix=mix) if kind == "chat"]
    assert not [text for text in chat for topic in held if topic in text]


def test_the_chat_mix_is_refused_for_held_out_prompts(corpus):
    with pytest.raises(ValueError, match="training only"):
        build_prompts("heldout", 64, corpus=corpus, mix="chat")


def test_the_held_out_prompts_are_those_the_docs_measured_on():
    prompts = heldout_prompts(12)
    assert all(len(texts) == 12 for texts in prompts.values())
    assert hashlib.sha256(json.dumps(prompts).encode()).hexdigest()[:16] == "7d27bd084c81850f"


def test_batches_are_planned_by_prompt_length():
    prompts = [("chat", "x" * n) for n in (5, 1, 4, 2, 3, 6)]
    batches, order = plan_batches(CharTokenizer(), prompts, batch_size=2, max_prompt_tokens=5, seed=0)
    assert [[len(ids) for _, _, ids in batch] for batch in batches] == [[1, 2], [3, 4], [5]]
    assert sorted(order) == [0, 1, 2]


def test_trained_greedy_prompts_are_the_even_batches_among_the_first_ones():
    prompts = [("chat" if n % 2 else "code", "x" * n) for n in range(1, 13)]
    batches, order = plan_batches(CharTokenizer(), prompts, batch_size=2, max_prompt_tokens=320, seed=0)
    trained = trained_greedy_prompts(CharTokenizer(), prompts, batch_size=2, max_batches=4)
    expected = {"x" * len(ids) for b in order[:4] if b % 2 == 0 for _, _, ids in batches[b]}
    assert {text for texts in trained.values() for text in texts} == expected
    assert all(kind == ("chat" if len(text) % 2 else "code") for kind, texts in trained.items() for text in texts)
