"""Sampled tree steps: recursive rejection sampling (verify.verify_tree_sampled) over trees whose children
are draws from q without replacement (EagleDrafter.propose_tree with a sampling context).

The chi-square test is test_zoo_heads.py's: the first two generated tokens of 20,000 seeded runs against
the enumerated law of the warped target, pass at p >= 0.001, on a 6-token vocabulary where a node's
children often exhaust the draft's support and the draft vocabulary leaves two ids out (q = 0 there).
"""
from __future__ import annotations

from dataclasses import replace

from specdec import DecodeSettings
from specdec.engine.decoding import Generation
from specdec.engine.tree import TreeShape
from specdec.engine.verify import verify_tree_sampled

import pytest
import torch

from tests.distribution import exact_first_two, speculative_counts
from tests.drafters.test_zoo_heads import (
    P_VALUE_THRESHOLD,
    PROMPT,
    SAMPLES,
    VOCAB,
    loaded,
    next_logits,
    random_eagle,
    tiny_llama,
)
from tests.stats import chi_square_p_value

SHAPE = TreeShape(top=2, beam=2, nodes=5)


@pytest.fixture(scope="module")
def target():
    return loaded(tiny_llama(VOCAB))


def tree_drafter(target, shape=SHAPE):
    drafter = random_eagle(target)
    drafter.tree_shape = shape
    return drafter


def test_sampled_tree_steps_follow_the_target_distribution(target):
    settings = DecodeSettings(temperature=0.7, top_k=4)  # warped p and q: top-k leaves q = 0 on more ids
    counts = speculative_counts(target, tree_drafter(target), settings, SAMPLES, PROMPT, VOCAB)
    expected = exact_first_two(next_logits(target), settings, PROMPT, VOCAB)
    assert counts[expected == 0].sum() == 0
    assert chi_square_p_value(counts, expected) >= P_VALUE_THRESHOLD


def test_sampled_tree_steps_accept_a_sibling_after_a_rejected_child(target):
    """Guards the test above: the residual path (a child rejected, a later sibling accepted) occurs."""
    generator = torch.Generator().manual_seed(0)
    settings = replace(DecodeSettings(temperature=1.0), k=3, max_new_tokens=4)
    seen = False
    for _ in range(200):
        for event in Generation(target, tree_drafter(target), PROMPT, settings, generator=generator).result().events:
            kept = {i for i, node in enumerate(event.tree) if node.kept}
            seen |= any(node.evaluated and not node.kept and any(event.tree[j].parent == node.parent for j in kept)
                        for node in event.tree)
    assert seen


def test_a_sampled_tree_holds_at_most_its_node_budget_with_parents_before_children(target):
    drafter = tree_drafter(target, TreeShape(top=3, beam=2, nodes=7))
    settings = replace(DecodeSettings(temperature=1.0), k=4, max_new_tokens=12)
    for event in Generation(target, drafter, PROMPT, settings).result().events:
        assert len(event.tree) <= 7
        assert all(node.parent < i for i, node in enumerate(event.tree))
        siblings = [(node.parent, node.token_id) for node in event.tree]
        assert len(set(siblings)) == len(siblings)  # drawn without replacement: no sibling repeats another


#   root: children a (node 0), b (node 1), both drawn from Q; a's child c (node 2)
PARENTS, IDS = [-1, -1, 0], [0, 1, 2]
Q = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])  # the distribution each node was drawn from


def q_rows(nodes):
    return Q[nodes]


def test_after_a_rejected_child_its_sibling_is_tried_against_the_residual_and_q_without_it():
    # p(a) = 0 rejects a; the residual norm(max(0, p - q)) = (0, 1, 0) and q without a = (0, 1, 0) accept b
    p = torch.tensor([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    path, tried, verdict = verify_tree_sampled(IDS, PARENTS, p, q_rows, torch.Generator().manual_seed(1))
    assert path == [1] and tried == [0, 1]
    assert verdict.num_accepted == 1 and verdict.accept_probs == [1.0] and verdict.next_kind == "bonus"


def test_when_every_child_is_rejected_the_next_token_comes_from_the_last_residual():
    # p = (0, 0.2, 0.8): a is rejected (p(a) = 0), the residual (0, 0, 1) rejects b (q now (0, 1, 0)), and
    # token 2 follows
    p = torch.tensor([[0.0, 0.2, 0.8], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    path, tried, verdict = verify_tree_sampled(IDS, PARENTS, p, q_rows, torch.Generator().manual_seed(1))
    assert path == [] and tried == [0, 1]
    assert verdict.next_token == 2 and verdict.next_kind == "resampled"
    assert verdict.accept_probs == [0.0]  # the shown chain: the first child tried, rejected


def test_siblings_after_an_accepted_child_are_never_tried():
    # p = q at the root accepts a whatever the draw; at a, c is accepted (p(c) = q(c)); b is never tried
    p = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.0, 1.0, 0.0]])
    path, tried, verdict = verify_tree_sampled(IDS, PARENTS, p, q_rows, torch.Generator().manual_seed(3))
    assert path == [0, 2] and tried == [0, 2] and verdict.next_kind == "bonus"


def test_the_sampling_check_refuses_a_tree_drafter_with_a_message(target):
    from specdec.errors import InvalidSettingsError
    from specdec.exactness.lossless import check_sampling

    with pytest.raises(InvalidSettingsError, match="drafts trees"):
        next(check_sampling(target, tree_drafter(target), PROMPT, DecodeSettings(temperature=1.0), draws=10))


def test_a_sampled_tree_tokens_explanation_names_the_siblings_rule(target):
    from specdec.ui.views.inspector import inspect_details

    settings = replace(DecodeSettings(temperature=1.0), k=3, max_new_tokens=8)
    events = Generation(target, tree_drafter(target), PROMPT, settings).result().events
    event = next(e for e in events if e.tree_nodes and e.drafted)
    assert "r and q being p and q less what rejected earlier siblings took" in inspect_details(event, "d0")
