"""Drafters are warmed up when they are loaded (Drafter.warm_up, called by registry.load_drafter): the one-time
work of a first proposal, such as packing the head's and the head rows' weights, is done before any run, and
the warm-up changes nothing a drafter proposes."""
from __future__ import annotations

from specdec import DecodeSettings
from specdec.drafters.registry import build_drafter, load_drafter
from specdec.planning.run import generate
from specdec.engine.tree import TreeShape
from specdec.runners import packed_weights

import pytest

from tests.drafters.test_zoo_heads import PROMPT, random_eagle, random_eagle3, random_medusa, target  # noqa: F401 (target: the fixture)
from tests.tiny_models import build_model, save, tiny_config

GREEDY = DecodeSettings(k=3, max_new_tokens=12)
SAMPLED = DecodeSettings(k=3, max_new_tokens=12, temperature=1.0, seed=5)


def random_eagle_tree(target):
    drafter = random_eagle(target)
    drafter.tree_shape = TreeShape(top=2, beam=2, nodes=4)
    return drafter


HEADS = {"medusa": random_medusa, "eagle": random_eagle, "eagle3": random_eagle3, "eagle tree": random_eagle_tree}


@pytest.fixture
def copies_made(monkeypatch):
    """A list that grows by one each time a weight's packed copy is made (packed_weights.weights_for)."""
    if not (packed_weights.fp16_available() or packed_weights.bf16_available()):
        pytest.skip("no packed weight copies on this machine (SPECDEC_PACKED_WEIGHTS=0 or no kernel)")
    made = []
    for name in ("_fp16_copy", "_bf16_copy"):
        original = getattr(packed_weights, name)
        monkeypatch.setattr(packed_weights, name, lambda w, b, original=original: made.append(w) or original(w, b))
    return made


def copies_in_first_step(drafter, target, copies_made) -> list:
    """The weights packed during a run's first step with `drafter`, the target's own left out (packed by a
    target-only run first)."""
    generate(target, None, PROMPT, DecodeSettings(max_new_tokens=2))
    copies_made.clear()
    generate(target, drafter, PROMPT, DecodeSettings(k=3, max_new_tokens=2))
    return list(copies_made)


@pytest.mark.parametrize("head", HEADS)
def test_a_warmed_up_heads_first_step_packs_no_weights(head, target, copies_made):
    drafter = HEADS[head](target)
    drafter.warm_up()
    assert copies_in_first_step(drafter, target, copies_made) == []


@pytest.mark.parametrize("head", HEADS)
def test_without_warm_up_a_heads_first_step_packs_its_weights(head, target, copies_made):
    """Guards the test above: the copies it looks for are made in step 0 when nothing warmed the drafter up."""
    assert copies_in_first_step(HEADS[head](target), target, copies_made)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("settings", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_warm_up_changes_nothing_a_head_drafts(head, settings, target):
    cold = generate(target, HEADS[head](target), PROMPT, settings)
    warmed = HEADS[head](target)
    warmed.warm_up()
    warm = generate(target, warmed, PROMPT, settings)
    assert warm.token_ids == cold.token_ids
    assert [[d.token_id for d in e.drafted] for e in warm.events] == [[d.token_id for d in e.drafted] for e in cold.events]


@pytest.mark.parametrize("head", HEADS)
def test_warm_up_leaves_a_heads_forward_counters_at_zero(head, target):
    drafter = HEADS[head](target)
    drafter.warm_up()
    assert (drafter.warm_ups, drafter.forward_calls, drafter.forward_time_s) == (1, 0, 0.0)


@pytest.fixture(scope="module")
def model_pair(tmp_path_factory):
    from specdec.models.loading import load_model

    folder = tmp_path_factory.mktemp("warm-up")
    target_folder = save(build_model(tiny_config("llama"), seed=0), folder / "target")
    return load_model(target_folder), save(build_model(tiny_config("llama"), seed=1), folder / "draft")


@pytest.fixture
def never_loaded_draft(tmp_path):
    """A draft model's folder no other test loads (loading caches the model, and with it its packed weights)."""
    return save(build_model(tiny_config("llama"), seed=2), tmp_path / "draft")


def test_loading_a_draft_model_rehearses_it_once_and_keeps_no_runner(model_pair):
    target, draft_folder = model_pair
    drafter = load_drafter(draft_folder, target)
    assert (drafter.warm_ups, drafter.runner) == (1, None)


def test_a_loaded_draft_models_first_step_packs_no_weights(model_pair, copies_made):
    target, draft_folder = model_pair
    assert copies_in_first_step(load_drafter(draft_folder, target), target, copies_made) == []


def test_a_draft_model_built_without_warm_up_packs_its_weights_in_its_first_step(model_pair, never_loaded_draft,
                                                                                   copies_made):
    """Guards the test above."""
    target, _ = model_pair
    assert copies_in_first_step(build_drafter(never_loaded_draft, target), target, copies_made)


def test_a_loaded_draft_model_drafts_as_one_built_without_warm_up(model_pair):
    target, draft_folder = model_pair
    warm = generate(target, load_drafter(draft_folder, target), PROMPT, SAMPLED)
    cold = generate(target, build_drafter(draft_folder, target), PROMPT, SAMPLED)
    assert warm.token_ids == cold.token_ids and warm.metrics.draft_forwards == cold.metrics.draft_forwards


def test_a_lookup_has_nothing_to_warm_up(model_pair):
    target, _ = model_pair
    assert load_drafter("prompt-lookup", target).warm_ups == 0
