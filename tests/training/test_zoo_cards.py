"""Model cards of the zoo (training/zoo/cards.py), rendered from a given measurement: no model is loaded."""
from __future__ import annotations

import json

from specdec.drafters.eagle import EAGLE, EAGLE_TREE
from specdec.drafters.registry import TREES

from training.zoo.cards import write_model_cards

FIGURES = {"prompts": 2, "acceptance": 0.5, "tokens_per_forward": 2.6, "c": 0.2, "speedup": 0.4,
           "tokens_per_s": 9.0, "baseline_tokens_per_s": 22.0, "rows": []}


def measurement(name: str, settings: tuple[str, ...]) -> dict:
    return {"figures": {name: {s: {k: dict(FIGURES) for k in ("chat", "code", "rewrite")} for s in settings}},
            "best_k_greedy_chat": {name: {1: 1.1, 2: 1.0, 4: 0.4}}, "param_bytes": {name: 1},
            "target_dtype": "float32", "runner": "static", "machine": "test CPU", "load_average": "1.0",
            "prompts": {"chat": ["a", "b"]}, "seconds": 1.0}


def eagle_folder(tmp_path):
    (tmp_path / EAGLE).mkdir()
    (tmp_path / EAGLE / "zoo.json").write_text(json.dumps({"family": "eagle", "command": "python -m training zoo"}))
    return tmp_path


def test_a_tree_drafts_card_is_written_to_its_own_folder(tmp_path):
    write_model_cards(eagle_folder(tmp_path), measurement(EAGLE_TREE, ("greedy", "T0.7")), log=lambda s: None)
    card = (tmp_path / EAGLE_TREE / "README.md").read_text()
    assert "| K=4 greedy | chat prose | 0.50 | 2.60 |" in card and "| K=4, T=0.7 | chat prose |" in card
    assert json.loads((tmp_path / EAGLE_TREE / "card.json").read_text())["figures"].keys() == {"greedy", "T0.7"}


def test_a_tree_drafts_card_names_the_eagle_heads_weights_and_its_node_count(tmp_path):
    write_model_cards(eagle_folder(tmp_path), measurement(EAGLE_TREE, ("greedy", "T0.7")), log=lambda s: None)
    card = (tmp_path / EAGLE_TREE / "README.md").read_text()
    assert f"The weights and the recipe below are `{EAGLE}`'s" in card
    assert f"only the weights in ../{EAGLE}/ are new" in card
    assert f"a tree of {TREES[EAGLE_TREE].nodes} tokens" in card


def test_a_card_counts_the_measurements_own_cores_out_of_the_load_average(tmp_path):
    m = {**measurement(EAGLE, ("greedy",)), "load_average": "2.01", "own_cores": 1.74}
    write_model_cards(eagle_folder(tmp_path), m, log=lambda s: None)
    assert "with nothing else running (load average 2.01 at the end, 1.74 cores of it the measurement's own)" in (
        tmp_path / EAGLE / "README.md").read_text()
    m["own_cores"] = 0.9
    write_model_cards(tmp_path, m, log=lambda s: None)
    assert "while other work shared the CPU" in (tmp_path / EAGLE / "README.md").read_text()


def test_only_the_heads_cards_say_they_draft_their_texts_ids_too(tmp_path):
    write_model_cards(eagle_folder(tmp_path), measurement(EAGLE, ("greedy",)), log=lambda s: None)
    assert "the head also scores the ids of its request's text" in (tmp_path / EAGLE / "README.md").read_text()
    (tmp_path / EAGLE / "zoo.json").write_text(json.dumps({"family": "draft", "command": "python -m training zoo"}))
    write_model_cards(tmp_path, measurement(EAGLE, ("greedy",)), log=lambda s: None)
    assert "the head also scores" not in (tmp_path / EAGLE / "README.md").read_text()
