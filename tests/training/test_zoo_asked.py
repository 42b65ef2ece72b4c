"""Instructions the target writes itself (training/zoo/asked.py): held-out topics, tasks and template wording are
refused, the list is reproducible and written once, and a profile that asks for them trains on their answers."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.drafters.test_zoo_heads import tiny_llama
from training.zoo.asked import asked_prompts, is_kept, mentions_held_out, write_instructions
from training.zoo.prompts import (
    CHAT_TEMPLATES,
    CODE_TEMPLATES,
    HELDOUT_CHAT_TEMPLATES,
    HELDOUT_CHAT_TOPICS,
    HELDOUT_CODE_TASKS,
    MORE_CHAT_TEMPLATES,
    _split,
    build_prompts,
)

EOS = 2


class WordTokenizer:
    """A chat template of a few fixed ids before the user's words; each id decodes to one word."""

    specials = {"<|im_start|>": 1, "<|im_end|>": EOS}
    pad_token_id = 0

    def convert_tokens_to_ids(self, token):
        return self.specials[token]

    def apply_chat_template(self, messages, add_generation_prompt=True, tokenize=True):
        if not tokenize:
            return "<s>system\nbe brief</s>\n<s>user\n" + messages[0]["content"] + "</s>\n"
        return [1, 7, 8, 2, 1, 9] + [3 + ord(c) % 120 for c in messages[0]["content"]] + [2, 1, 5, 6]

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [1, 7, 8, 2, 1, 9][: 2 + len(text) // 8]}

    def decode(self, ids):
        return " ".join(f"w{i}" for i in ids)


@pytest.mark.parametrize("template", HELDOUT_CHAT_TEMPLATES + CHAT_TEMPLATES + MORE_CHAT_TEMPLATES)
def test_every_held_out_chat_topic_is_refused_in_any_wording(template):
    topics = _split(HELDOUT_CHAT_TOPICS)
    assert [t for t in topics if not mentions_held_out(template.format(t=t, u="cats"))] == []


@pytest.mark.parametrize("template", CODE_TEMPLATES)
def test_every_held_out_coding_task_is_refused(template):
    tasks = _split(HELDOUT_CODE_TASKS)
    assert [t for t in tasks if not mentions_held_out(template.format(t=t))] == []


@pytest.mark.parametrize("wording", ["Can you tell me about sheep?", "I want to understand taxes. Where should I begin?",
                                     "Write a friendly explanation of tides for a club.",
                                     "What should everyone know about soap?"])
def test_the_held_out_templates_wording_is_refused_whatever_the_topic(wording):
    assert mentions_held_out(wording)


def test_most_training_chat_prompts_are_kept():
    chat = [text for kind, text in build_prompts("train", 2000, mix="chat") if kind == "chat"]
    kept = sum(map(is_kept, chat))
    assert kept / len(chat) > 0.9


@pytest.mark.parametrize("text", ["Hi there", " ".join(["word"] * 81)])
def test_too_short_or_too_long_turns_are_dropped(text):
    assert not is_kept(text)


def _model():
    model = tiny_llama(128, seed=3, layers=2)
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def test_the_written_instructions_are_the_same_for_the_same_seed():
    model = _model()
    first = write_instructions(model, WordTokenizer(), 6, seed=1, batch_size=16, max_new_tokens=40, log=lambda s: None)
    again = write_instructions(model, WordTokenizer(), 6, seed=1, batch_size=16, max_new_tokens=40, log=lambda s: None)
    other = write_instructions(model, WordTokenizer(), 6, seed=2, batch_size=16, max_new_tokens=40, log=lambda s: None)
    assert first == again and first != other
    assert len(set(first)) == 6 and all(map(is_kept, first))


def test_a_model_that_never_ends_its_turn_gives_a_clear_error():
    model = _model()
    with pytest.raises(RuntimeError, match="only 0 of 4 instructions kept"):
        write_instructions(model, WordTokenizer(), 4, batch_size=2, max_new_tokens=1, max_batches=2,
                           log=lambda s: None)


def test_asked_instructions_are_written_once_and_then_read_back(tmp_path):
    (tmp_path / "asked.json").write_text(json.dumps({"n": 2, "seed": 0, "instructions": ["Plan a picnic.", "Why?"]}))
    assert asked_prompts(None, WordTokenizer(), tmp_path, 2) == [("asked", "Plan a picnic."), ("asked", "Why?")]


def test_a_profile_with_asked_instructions_trains_on_their_answers_too(tmp_path):
    from training.zoo.pipeline import EAGLE3, PROFILES, build_zoo

    profile = replace(PROFILES["tiny-eagle3"], asked_prompts=3)
    prompts = [("chat", "hello there"), ("code", "def f(x): return x"), ("rewrite", "make it short please")]
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "asked.json").write_text(json.dumps(
        {"n": 3, "seed": 0, "instructions": ["plan a picnic", "name three birds", "why do leaves fall"]}))
    summary = build_zoo(_model(), WordTokenizer(), tmp_path / "out", tmp_path / "work", profile, seed=0,
                        command="test", prompts=prompts, log=lambda s: None)
    data = summary["drafters"][EAGLE3]["data"]
    assert data["by_kind"] == {"asked": 3, "chat": 1, "code": 1, "rewrite": 1}
    assert "wrote itself" in data["source"]


def test_a_model_card_counts_the_batches_of_asked_instructions():
    from training.zoo.cards import _generation

    line = _generation({"generation": {"batches": 101, "batch_size": 48, "wall_s": 600,
                                       "asked": {"batches": 40, "batch_size": 48}}})
    assert line.startswith("101 batches of 48 prompts and 40 of instructions the target wrote itself in 10 min")
