"""The EAGLE-3 head (an EAGLE head over a fusion of several of the target's layers) on small built Llama models:
the runners hand it the layers it asks for, its tree drafts are exact (greedy identity, chi-square), its
training pipeline saves the curve's checkpoints and a loadable head, and it is one registry entry (plus a tree).

The chain's exactness and its training/runtime agreement are tests/drafters/test_zoo_heads.py's (parametrised "eagle3").
"""
from __future__ import annotations

import json

from specdec import DecodeSettings
from specdec.drafters.eagle import build_eagle
from specdec.drafters.heads import EagleHead
from specdec.engine.decoding import Generation
from specdec.engine.tree import TreeShape

import pytest
import torch

from tests.distribution import exact_first_two, speculative_counts
from tests.drafters.test_zoo_heads import (
    P_VALUE_THRESHOLD,
    PROMPT,
    SAMPLES,
    VOCAB,
    CharTokenizer,
    loaded,
    next_logits,
    random_eagle3,
    target_states,
    tiny_llama,
)
from tests.stats import chi_square_p_value


@pytest.mark.parametrize("backend", ["auto", "hf-eager"])
def test_a_runner_keeps_the_outputs_of_the_layers_a_drafter_reads(backend):
    model = tiny_llama(64, seed=9, layers=3)
    target = loaded(model)
    target.backend = backend
    ids = [4, 8, 15, 16, 23, 42]
    runner = target.new_runner(64, 32, keep_hidden=(0, 2))
    runner.prefill(ids[:4])
    prefix = runner.hidden
    runner.forward(ids[4:])
    with torch.no_grad():
        expected = target_states(model, ids, (0, 2))
    torch.testing.assert_close(torch.cat([prefix, runner.hidden]), expected, rtol=1e-4, atol=1e-4)


def tree_eagle3(target, shape=TreeShape(top=3, beam=2, nodes=6), **kwargs):
    drafter = random_eagle3(target, **kwargs)
    drafter.tree_shape = shape
    return drafter


@pytest.mark.parametrize("input_layout", EagleHead.INPUT_LAYOUTS)
@pytest.mark.parametrize("backend", ["auto", "hf-eager"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_an_eagle3_tree_greedy_output_is_the_target_alone(backend, k, input_layout):
    target = loaded(tiny_llama(64, seed=3))
    target.backend = backend
    settings = DecodeSettings(max_new_tokens=24, k=k)
    alone = Generation(target, None, [5, 9, 11], settings).result().token_ids
    drafter = tree_eagle3(target, vocab=64, draft_vocab=torch.arange(0, 64, 2), input_layout=input_layout)
    result = Generation(target, drafter, [5, 9, 11], settings).result()
    assert result.token_ids == alone
    assert all(e.tree_nodes > 0 for e in result.events[:-1])


@pytest.mark.parametrize("input_layout", EagleHead.INPUT_LAYOUTS)
def test_sampled_eagle3_tree_steps_follow_the_target_distribution(input_layout):
    target = loaded(tiny_llama(VOCAB))
    settings = DecodeSettings(temperature=0.7, top_k=4)
    drafter = tree_eagle3(target, TreeShape(top=2, beam=2, nodes=5), input_layout=input_layout)
    counts = speculative_counts(target, drafter, settings, SAMPLES, PROMPT, VOCAB)
    expected = exact_first_two(next_logits(target), settings, PROMPT, VOCAB)
    assert counts[expected == 0].sum() == 0
    assert chi_square_p_value(counts, expected) >= P_VALUE_THRESHOLD


def test_the_eagle3_pipeline_saves_its_checkpoints_and_a_head_that_drafts_exactly(tmp_path):

    from training.zoo.pipeline import EAGLE3, PROFILES, build_zoo

    model = tiny_llama(128, seed=6, layers=3)
    for p in model.parameters():
        p.requires_grad_(False)
    prompts = [("chat", "hello there"), ("code", "def f(x): return x"), ("rewrite", "make it short please")]
    summary = build_zoo(model, CharTokenizer(), tmp_path / "out", tmp_path / "work", PROFILES["tiny-eagle3"],
                        seed=0, command="test", prompts=prompts, log=lambda s: None)
    meta = summary["drafters"][EAGLE3]
    assert set(summary["drafters"]) == {EAGLE3} and meta["feature_layers"] == [1, 2]
    assert meta["train_config"]["reg_weight"] == 0.0  # tokens only
    checkpoints = sorted((tmp_path / "work" / "checkpoints").iterdir())
    planned = meta["training"]["planned_steps"]
    assert [c.name.startswith(f"{EAGLE3}-step") and c.name.endswith(f"-of-{planned}") for c in checkpoints] == [True]
    assert json.loads((checkpoints[0] / "zoo.json").read_text())["training"]["steps"] < meta["training"]["steps"]
    target = loaded(model)
    settings = DecodeSettings(max_new_tokens=12, k=3)
    alone = Generation(target, None, [7, 8, 9], settings).result().token_ids
    for folder in (tmp_path / "out" / EAGLE3, checkpoints[0]):
        drafter = build_eagle(target, "g3", "", folder)
        assert drafter.target_layers == (1, 2) and drafter.head.layers[0].mlp.gate_proj.out_features == 16
        assert Generation(target, drafter, [7, 8, 9], settings).result().token_ids == alone


def test_the_eagle3_recipe_refuses_data_without_the_layers_it_reads(tmp_path):
    from dataclasses import replace

    from training.zoo.pipeline import EAGLE3, PROFILES, build_zoo

    model = tiny_llama(128, seed=6, layers=3)
    for p in model.parameters():
        p.requires_grad_(False)
    profile = replace(PROFILES["tiny-eagle3"], feature_layers=())
    with pytest.raises(ValueError, match="feature_layers"):
        build_zoo(model, CharTokenizer(), tmp_path / "out", tmp_path / "work", profile, seed=0,
                  prompts=[("chat", "hello there")], only=(EAGLE3,), log=lambda s: None)


def _tiny_eagle3_zoo(model, out, work, profile):
    from training.zoo.pipeline import build_zoo

    prompts = [("chat", "hello there"), ("code", "def f(x): return x"), ("rewrite", "make it short please")]
    return build_zoo(model, CharTokenizer(), out, work, profile, seed=0, command="test", prompts=prompts,
                     log=lambda s: None)


def _trained_then_again(tmp_path, init_from=None, profile_changes=None, **recipe):
    """A tiny EAGLE-3 head trained into tmp_path/first, then a second run on the same data with `recipe` (and the
    profile's `profile_changes`) changed, from init_from(first head's folder) (default: that folder itself); returns the
    second run's zoo.json record."""
    from dataclasses import replace

    from training.zoo.pipeline import EAGLE3, PROFILES

    model = tiny_llama(128, seed=6, layers=3)
    for p in model.parameters():
        p.requires_grad_(False)
    tiny = PROFILES["tiny-eagle3"]
    _tiny_eagle3_zoo(model, tmp_path / "first", tmp_path / "work", tiny)
    init_from = str(tmp_path / "first" / EAGLE3) if init_from is None else init_from(tmp_path / "first" / EAGLE3)
    again = replace(tiny, **(profile_changes or {}), eagle3=replace(tiny.eagle3, init_from=init_from, **recipe))
    return _tiny_eagle3_zoo(model, tmp_path / "again", tmp_path / "work", again)["drafters"][EAGLE3]


def _shifted(trained):
    """init_from for _trained_then_again: the trained head with every draft id moved by one (as another data's draft
    vocabulary differs from this one's), saved beside its folder's parent as 'shifted'."""
    from specdec.drafters.shipped import load_tensors, read_meta, save_tensors

    tensors = load_tensors(trained)
    tensors["draft_vocab"] = tensors["draft_vocab"] + 1
    save_tensors(trained.parent.parent / "shifted", tensors, read_meta(trained))
    return str(trained.parent.parent / "shifted")


def test_training_from_a_trained_head_starts_from_its_weights(tmp_path):
    from specdec.drafters.shipped import load_tensors

    from training.zoo.pipeline import EAGLE3

    # one step at learning rate 0 changes nothing: what is saved is what the run started from
    meta = _trained_then_again(tmp_path, max_steps=1, lr=0.0)
    first, second = load_tensors(tmp_path / "first" / EAGLE3), load_tensors(tmp_path / "again" / EAGLE3)
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert str(tmp_path / "first" / EAGLE3) in meta["init"] and "sha256" in meta["init"]


def test_training_from_a_head_that_drafts_ids_outside_the_runs_vocabulary_is_refused(tmp_path):
    with pytest.raises(ValueError, match="ids this run's draft vocabulary lacks"):
        _trained_then_again(tmp_path, init_from=_shifted)


def _draft_vocabularies_after_going_on_from_a_shifted_head(tmp_path, widen: bool):
    """(the shifted head's draft vocabulary, the first run's own, the second run's) when the second run keeps the
    shifted head's vocabulary (draft_vocab_from), widened by its data's own when `widen`."""
    from specdec.drafters.shipped import load_tensors

    from training.zoo.pipeline import EAGLE3

    _trained_then_again(tmp_path, init_from=_shifted,
                        profile_changes={"draft_vocab_from": str(tmp_path / "shifted"), "widen_draft_vocab": widen})
    return tuple(load_tensors(folder)["draft_vocab"]
                 for folder in (tmp_path / "shifted", tmp_path / "first" / EAGLE3, tmp_path / "again" / EAGLE3))


def test_a_profile_can_keep_a_trained_heads_draft_vocabulary_to_go_on_from_its_weights(tmp_path):
    shifted, _, again = _draft_vocabularies_after_going_on_from_a_shifted_head(tmp_path, widen=False)
    assert torch.equal(again, shifted)


def test_a_profile_can_widen_a_trained_heads_draft_vocabulary_with_its_own_datas(tmp_path):
    shifted, own, again = _draft_vocabularies_after_going_on_from_a_shifted_head(tmp_path, widen=True)
    assert torch.equal(again, torch.cat([shifted, own]).unique().int())


def test_eagle3_is_one_registry_entry_with_an_eight_node_tree_of_its_weights():
    from specdec.drafters.eagle3 import EAGLE3, EAGLE3_TREE
    from specdec.drafters.registry import BY_NAME, TREES, WEIGHTS

    assert BY_NAME[EAGLE3].tree is None and BY_NAME[EAGLE3].family == "eagle"
    assert TREES[EAGLE3_TREE].nodes == 8 and WEIGHTS[EAGLE3_TREE] == EAGLE3


@pytest.mark.parametrize("follow_context", [True, False], ids=["context-rows", "draft-vocabulary-only"])
@pytest.mark.parametrize("input_layout", EagleHead.INPUT_LAYOUTS)
def test_a_heads_teacher_forced_first_guesses_are_its_first_drafts_in_decoding(input_layout, follow_context):
    from training.zoo.first_guess import first_guesses, target_pass

    model = tiny_llama(64, seed=9, layers=3)
    target = loaded(model)
    drafter = random_eagle3(target, vocab=64, draft_vocab=torch.arange(0, 64, 2), input_layout=input_layout)
    drafter.head_rows.follows_context = follow_context
    prompt = [4, 8, 15, 16, 23, 42]
    seen = target_pass(model, prompt, 16, drafter.head.feature_layers)
    guesses = first_guesses(model, drafter.head, drafter.head_rows.base_ids, seen.ids, seen.states, follow_context)
    result = Generation(target, drafter, prompt, DecodeSettings(max_new_tokens=16, k=1)).result()
    assert result.token_ids == seen.ids[len(prompt):].tolist()
    position, drafts = len(prompt), []
    for event in result.events:
        if event.k == 1:
            drafts.append((event.drafted[0].token_id, int(guesses[position - 2])))
        position += len(event.emitted_ids)
    assert len(drafts) >= 8 and all(draft == guess for draft, guess in drafts)


def test_first_guess_agreement_counts_every_answer_token_after_the_first_and_which_the_head_could_draft():
    from training.zoo.first_guess import agreement, target_pass

    model = tiny_llama(64, seed=9, layers=3)
    drafter = random_eagle3(loaded(model), vocab=64, draft_vocab=torch.arange(0, 64, 2))
    prompt = [4, 8, 15, 16, 23, 42]
    seen = target_pass(model, prompt, 16, drafter.head.feature_layers)
    agree, confidence, draftable = agreement(model, drafter.head, drafter.head_rows.base_ids, seen)
    answer = seen.ids[len(prompt):]
    assert len(agree) == len(confidence) == len(draftable) == len(answer) - 1
    seen_before = [int(t) in seen.ids[:len(prompt) + i + 1].tolist() for i, t in enumerate(answer[1:])]
    # the target's greedy choices in the even-id draft vocabulary, or in the text before them (the context's rows)
    assert draftable.tolist() == [bool(t % 2 == 0) or s for t, s in zip(answer[1:], seen_before)]
    assert any(s and t % 2 for t, s in zip(answer[1:], seen_before))  # the context's rows did matter here
    assert not agree[~draftable].any() and bool(((confidence > 0) & (confidence <= 1)).all())
