"""Tree drafts (specdec/engine/tree.py): the tree helpers, the runners' forward_tree / keep, and the engine's
greedy tree steps, on small built models."""
from __future__ import annotations

from specdec import DecodeSettings
from specdec.drafters.base import ProposalContext
from specdec.engine.decoding import Generation
from specdec.engine.sampling import build_warpers
from specdec.engine.tree import TreeShape, greedy_path, select_nodes, shown_nodes
from specdec.runners.tree_attention import ancestor_mask, depths
from specdec.runners.backend import HFEagerRunner

import pytest
import torch

from tests.drafters.test_zoo_heads import loaded, random_eagle, tiny_llama

#        root
#       /    \
#     0(a)   1(b)
#    /   \      \
#  2(c)  3(d)   4(e)
#   |
#  5(f)
IDS = [10, 11, 12, 13, 14, 15]
PARENTS = [-1, -1, 0, 0, 1, 2]


def test_depths_count_levels_below_the_root():
    assert depths(PARENTS) == [1, 1, 2, 2, 2, 3]


def test_ancestor_mask_lets_a_node_see_the_root_its_ancestors_and_itself_only():
    mask = ancestor_mask(PARENTS)
    assert mask[0].tolist() == [True, False, False, False, False, False, False]
    assert mask[1 + 5].tolist() == [True, True, False, True, False, False, True]  # root, a, c, f
    assert mask[1 + 4].tolist() == [True, False, True, False, False, True, False]  # root, b, e


def test_greedy_path_follows_the_child_equal_to_the_target_choice():
    # target rows: root -> 10 (a), a -> 12 (c), c -> 15 (f), f -> 99 (no child)
    choices = [10, 12, 0, 15, 0, 0, 99]
    assert greedy_path(IDS, PARENTS, choices) == [0, 2, 5]


def test_greedy_path_is_empty_when_no_child_of_the_root_matches():
    assert greedy_path(IDS, PARENTS, [99] * 7) == []


def test_shown_nodes_add_the_best_child_of_the_last_kept_node_as_the_rejected_token():
    assert shown_nodes(PARENTS, [0]) == [0, 2]
    assert shown_nodes(PARENTS, []) == [0]
    assert shown_nodes(PARENTS, [1, 4]) == [1, 4]  # a leaf: nothing was rejected


def test_select_nodes_keeps_the_likeliest_nodes_as_a_tree_ordered_by_level():
    scores = [-0.1, -2.0, -0.3, -0.2, -2.5, -0.4]
    assert select_nodes(PARENTS, scores, 4) == [0, 3, 2, 5]


def test_a_tree_shape_refuses_zero_sizes():
    with pytest.raises(ValueError):
        TreeShape(top=0)


@pytest.fixture(scope="module")
def model():
    return loaded(tiny_llama(64, seed=5))


def runners(model, max_length=64):
    return {"static": model.new_runner(64, max_length), "hf-eager": HFEagerRunner(model.model, 64)}


@pytest.mark.parametrize("kind", ["static", "hf-eager"])
def test_forward_tree_scores_each_node_as_a_chain_through_its_ancestors_would(model, kind):
    prefix, root = [3, 7, 9, 20], 31
    tree_runner = runners(model)[kind]
    tree_runner.prefill(prefix)
    tree_logits = tree_runner.forward_tree(root, IDS, PARENTS)  # [7, V]
    for node in range(len(IDS)):
        chain, walk = [], node
        while walk >= 0:
            chain.insert(0, IDS[walk])
            walk = PARENTS[walk]
        chain_runner = runners(model)[kind]
        chain_runner.prefill(prefix)
        chain_logits = chain_runner.forward([root] + chain)
        torch.testing.assert_close(tree_logits[1 + node], chain_logits[-1], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(tree_logits[0], chain_logits[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["static", "hf-eager"])
def test_keep_leaves_the_cache_of_the_kept_path_as_if_it_had_been_fed_alone(model, kind):
    prefix, root = [3, 7, 9, 20], 31
    tree_runner = runners(model)[kind]
    tree_runner.prefill(prefix)
    tree_runner.forward_tree(root, IDS, PARENTS)
    tree_runner.keep(len(prefix), [0, 2, 5])  # rows of root, b (node 1), e (node 4): tokens 31, 11, 14
    assert tree_runner.length == len(prefix) + 3
    chain_runner = runners(model)[kind]
    chain_runner.prefill(prefix + [root, 11, 14])
    torch.testing.assert_close(tree_runner.forward([40, 41]), chain_runner.forward([40, 41]), rtol=1e-4, atol=1e-4)


def tree_eagle(target, shape=TreeShape(top=3, beam=2, nodes=6)):
    drafter = random_eagle(target, vocab=64, draft_vocab=torch.arange(0, 64, 2))
    drafter.tree_shape = shape
    return drafter


@pytest.mark.parametrize("backend", ["auto", "hf-eager"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_tree_drafter_greedy_output_is_the_target_alone(model, backend, k):
    model.backend = backend
    try:
        settings = DecodeSettings(max_new_tokens=24, k=k)
        alone = Generation(model, None, [5, 9, 11], settings).result().token_ids
        result = Generation(model, tree_eagle(model), [5, 9, 11], settings).result()
    finally:
        model.backend = "auto"
    assert result.token_ids == alone
    assert all(e.tree_nodes > 0 for e in result.events[:-1])


def test_a_tree_step_reports_the_kept_path_then_the_rejected_child(model):
    result = Generation(model, tree_eagle(model), [5, 9, 11], DecodeSettings(max_new_tokens=24, k=3)).result()
    for event in result.events:
        fates = [t.fate for t in event.drafted]
        assert fates == ["accepted"] * event.num_accepted + ["rejected"] * (len(fates) - event.num_accepted)
        assert len(fates) - event.num_accepted <= 1 and len(event.drafted) <= event.k_planned


def test_a_width_one_tree_drafts_the_same_tokens_as_the_chain(model):
    drafter = tree_eagle(model, TreeShape(top=1, beam=1, nodes=4))
    prompt = [5, 9, 11, 2, 40]
    with torch.no_grad():
        hidden = model.model.model(input_ids=torch.tensor([prompt])).last_hidden_state[0]
    drafter.start(prompt, 64)
    drafter.observe(hidden[:-1])
    tree = drafter.propose_tree(prompt, 4)
    chain = drafter.propose(prompt, 4, ProposalContext(False, build_warpers(DecodeSettings()), None))
    assert tree.parents == [-1, 0, 1, 2] and tree.ids == chain.ids
    torch.testing.assert_close(tree.q_rows([0, 1, 2, 3]), chain.q)


def test_a_tree_drafter_draws_trees_when_sampling(model):
    settings = DecodeSettings(max_new_tokens=12, k=3, temperature=1.0)
    events = Generation(model, tree_eagle(model), [5, 9, 11], settings).result().events
    assert all(0 < e.tree_nodes <= 6 for e in events[:-1])


def test_with_a_faulty_verifier_a_tree_drafter_drafts_chains(model):
    from specdec.exactness.verifier_faults import broken_verifier

    settings = DecodeSettings(max_new_tokens=12, k=3, temperature=1.0)
    run = Generation(model, tree_eagle(model), [5, 9, 11], settings, sampled_verifier=broken_verifier(accept="always"))
    events = run.result().events
    assert all(e.tree_nodes == 0 for e in events) and any(e.drafted for e in events)


def test_a_tree_step_is_narrated_with_every_node_coloured_by_its_fate(model):
    from specdec.ui.views.inspector import narrate_step, tree_fates, tree_html
    from specdec.ui.views.tables import steps_dataframe

    events = Generation(model, tree_eagle(model), [5, 9, 11], DecodeSettings(max_new_tokens=12, k=3)).result().events
    event = events[0]
    fates = tree_fates(event)
    assert fates.count("accepted") == event.num_accepted and len(fates) == event.tree_nodes
    compared = {-1} | {i for i, fate in enumerate(fates) if fate == "accepted"}
    for node, fate in zip(event.tree, fates):
        assert (fate == "unchecked") == (node.parent not in compared)
    assert "rejected" in fates and "unchecked" in fates
    html = narrate_step(event)
    assert f"a tree of {event.tree_nodes} tokens" in html and tree_html(event) in html
    assert tree_html(event).count('class="tok tok-') == event.tree_nodes
    assert steps_dataframe(events)["tree nodes"].iloc[0] == event.tree_nodes


def test_a_tree_draws_each_node_once_and_its_leaf_siblings_on_one_line():
    from types import SimpleNamespace

    from specdec.engine.events import TreeNode
    from specdec.ui.views.inspector import tree_html

    # the root's children a (with children c, d) and b; c, d and b are leaves
    nodes = [TreeNode(1, "a", -1, True), TreeNode(2, "b", -1, False), TreeNode(3, "c", 0, False),
             TreeNode(4, "d", 0, False)]
    html = tree_html(SimpleNamespace(tree=nodes))
    assert html.count('class="tok tok-') == 4 and html.count("<li>") == 3
    assert html.index(">a<") < html.index(">c<") < html.index(">d<") < html.index(">b<")
