"""How it works' drafter families: each zoo drafter's paragraph carries its model card's measured figures."""
from __future__ import annotations

import json
import shutil

from specdec.drafters.families import families_markdown
from specdec.drafters.registry import NAMES, TREES
from specdec.drafters.shipped import ASSETS

import pytest


@pytest.mark.parametrize("name", list(NAMES) + list(TREES))
def test_each_drafter_paragraph_shows_its_cards_chat_tokens_per_forward(name):
    card = json.loads((ASSETS / name / "card.json").read_text())
    chat = card["figures"]["greedy"]["chat"]
    text = families_markdown()
    paragraph = text.split(f"(`{name}`)")[1].split("**")[0]
    assert f"chat {chat['tokens_per_forward']:.2f} tok/fwd ({chat['speedup']:.2f}x)" in paragraph


def test_a_drafter_without_a_card_says_it_was_not_measured(tmp_path):
    name = "smollm2-135m-eagle"
    (tmp_path / name).mkdir()
    for other in NAMES:
        if other != name:
            shutil.copytree(ASSETS / other, tmp_path / other, ignore=shutil.ignore_patterns("*.safetensors"))
    paragraph = families_markdown(tmp_path).split(f"(`{name}`)")[1]
    assert "Not measured here (no model card)." in paragraph.split("Speedups are")[0]


@pytest.mark.parametrize("name", list(TREES))
def test_each_tree_draft_has_a_paragraph_with_its_node_count(name):
    paragraph = families_markdown().split(f"(`{name}`)")[1].split("**")[0]
    assert f"a tree of {TREES[name].nodes} tokens" in paragraph
