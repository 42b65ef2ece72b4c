"""Chat topics from the target's own vocabulary (training/zoo/topics.py) and the profiles that use them (the draft
vocabulary such a profile keeps or widens: tests/drafters/test_zoo_eagle3.py)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from training.zoo.pipeline import chat_topics
from training.zoo.prompts import build_prompts
from training.zoo.topics import candidate_words, vocabulary_topics


class VocabularyTokenizer:
    """A byte-level BPE vocabulary in miniature: 'Ġ' marks a token that starts a word. A text is tokenized as two
    context ids followed by its last word's id."""

    tokens = ["<eos>", ".", "ing", "Ġthe", "Ġcarpet", "Ġquickly", "Ġoctopuses", "carpet", "ĠRiver", "Ġwalked",
              "Ġgarden", "Ġinclud", "Ġlanterns"]
    eos_token_id = 0

    @property
    def vocab_size(self):
        return len(self.tokens)

    def convert_ids_to_tokens(self, ids):
        return self.tokens[ids] if isinstance(ids, int) else [self.tokens[i] for i in ids]

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [1, 1, self.tokens.index("Ġ" + text.rsplit(" ", 1)[-1])]}


class ContinuesOneWord:
    """A stand-in target that, after the word `fragment`, expects the word to go on ('ing'), and else a full stop."""

    def __init__(self, tokenizer, fragment):
        self.tokenizer, self.fragment_id = tokenizer, tokenizer.tokens.index("Ġ" + fragment)

    def __call__(self, ids, attention_mask=None):
        logits = torch.zeros(*ids.shape, self.tokenizer.vocab_size)
        goes_on = ids[:, -1] == self.fragment_id
        logits[goes_on, -1, self.tokenizer.tokens.index("ing")] = 20.0
        logits[~goes_on, -1, self.tokenizer.tokens.index(".")] = 20.0
        return SimpleNamespace(logits=logits)


def test_candidates_are_whole_lowercase_words_with_no_adverb_or_verb_ending_and_no_held_out_topic():
    assert candidate_words(VocabularyTokenizer(), skip_ids=0) == ["carpet", "garden", "includ", "lanterns"]


def test_candidates_skip_the_first_ids():
    tokenizer = VocabularyTokenizer()
    assert candidate_words(tokenizer, skip_ids=tokenizer.tokens.index("Ġgarden")) == ["garden", "includ", "lanterns"]


def test_a_word_the_target_goes_on_spelling_is_a_fragment_and_is_dropped():
    tokenizer = VocabularyTokenizer()
    topics = vocabulary_topics(ContinuesOneWord(tokenizer, "includ"), tokenizer, skip_ids=0)
    assert topics == ["carpet", "garden", "lanterns"]


def test_chat_topics_replace_the_training_topics():
    prompts = build_prompts("train", n=48, mix="chat", chat_topics=["zebras", "kites"])
    chat = [text for kind, text in prompts if kind == "chat"]
    assert chat and all("zebras" in text or "kites" in text for text in chat)


def test_the_held_out_split_keeps_its_own_topics():
    with pytest.raises(ValueError, match="held-out split keeps its own"):
        build_prompts("heldout", n=16, chat_topics=["zebras", "kites"])


def test_a_profile_of_vocabulary_topics_reads_its_list_back_from_the_work_folder(tmp_path):
    (tmp_path / "topics.json").write_text(json.dumps({"source": "vocabulary", "topics": ["zebras", "kites"]}))
    assert chat_topics(None, None, tmp_path, "vocabulary") == ["zebras", "kites"]


def test_a_profile_of_listed_topics_uses_the_lists():
    assert chat_topics(None, None, "unused", "lists") is None


def test_an_unknown_topic_source_is_refused():
    with pytest.raises(ValueError, match="topic_source"):
        chat_topics(None, None, "unused", "wikipedia")
