"""Suffix decoding (specdec/drafters/suffix.py): exact (greedy identity, chi-square under sampling at K=1 and K=3
with the tree path's harness), a bounded store of earlier outputs, the privacy rule of a public deployment, and
learning across requests."""
from __future__ import annotations

from dataclasses import replace

from specdec import DecodeSettings, generate, load_model
from specdec.drafters import registry, suffix
from specdec.drafters.suffix import SuffixDrafter, SuffixStore

import pytest
import torch

from tests.distribution import exact_first_two, speculative_counts
from tests.drafters.test_zoo_heads import P_VALUE_THRESHOLD, SAMPLES, VOCAB, loaded, next_logits, tiny_llama
from tests.stats import chi_square_p_value

# repeats with different continuations, so that matches branch (the trees have siblings) and drafts occur
PROMPT = [1, 4, 2, 1, 4, 3, 1, 4, 2, 5, 1]
CODE = "def area(w, h):\n    return w * h\n\ndef volume(w, h, d):\n    return w * h * d\n\n"


@pytest.fixture(autouse=True)
def fresh_stores(monkeypatch):
    """Each test starts with no earlier requests, on a local deployment, outside the app (no session owner)."""
    monkeypatch.setattr(suffix, "STORES", {})
    monkeypatch.setattr(suffix, "owner_source", None)
    monkeypatch.setattr(suffix, "public_source", lambda: False)
    monkeypatch.delenv(suffix.SHARED_STORE, raising=False)


@pytest.fixture(scope="module")
def lab():
    return load_model("lab-target")


@pytest.fixture(scope="module")
def tiny():
    return loaded(tiny_llama(VOCAB))


def branching(target, **kwargs) -> SuffixDrafter:
    """Large drafts from short matches and every continuation kept: trees that branch on the tiny vocabulary."""
    return SuffixDrafter(VOCAB, torch.device("cpu"), target.name, max_spec_factor=8.0, min_token_prob=0.0, **kwargs)


def test_suffix_greedy_output_is_the_lab_targets_own(lab):
    ids = lab.encode(CODE)
    settings = DecodeSettings(k=8, max_new_tokens=40)
    drafter = registry.load_drafter("suffix", lab)
    alone = generate(lab, None, ids, settings).token_ids
    assert [generate(lab, drafter, ids, settings).token_ids for _ in range(2)] == [alone, alone]


def test_suffix_greedy_output_is_a_tiny_models_own(tiny):
    settings = DecodeSettings(k=3, max_new_tokens=24)
    drafter = branching(tiny)
    alone = generate(tiny, None, PROMPT, settings).token_ids
    run = generate(tiny, drafter, PROMPT, settings)
    assert run.token_ids == alone and run.metrics.tokens_per_forward > 1


def test_suffix_greedy_output_stays_the_targets_own_with_request_and_store_searched_apart(lab):
    ids, settings = lab.encode(CODE), DecodeSettings(k=8, max_new_tokens=40)
    drafter = registry.load_drafter("suffix", lab)
    drafter.split = True
    alone = generate(lab, None, ids, settings).token_ids
    runs = [generate(lab, drafter, ids, settings) for _ in range(2)]
    assert [run.token_ids for run in runs] == [alone, alone]
    assert runs[1].metrics.tokens_per_forward > runs[0].metrics.tokens_per_forward  # the store was drafted from


@pytest.mark.parametrize("k", [1, 3])
def test_suffix_samples_follow_the_target_distribution(tiny, k):
    """20,000 runs of one drafter whose store keeps the last 8 outputs: each run drafts from earlier runs' outputs
    as well as its own request, and the first two tokens still follow the warped target's law."""
    settings = DecodeSettings(temperature=0.8, top_k=5)
    counts = speculative_counts(tiny, branching(tiny, max_cached_requests=8), settings, SAMPLES, PROMPT, VOCAB, k=k)
    expected = exact_first_two(next_logits(tiny), settings, PROMPT, VOCAB)
    assert counts[expected == 0].sum() == 0
    assert chi_square_p_value(counts, expected) >= P_VALUE_THRESHOLD


def test_sampled_suffix_trees_branch_and_accept_a_sibling_after_a_rejection(tiny):
    """Guards the chi-square test: its trees have siblings and the residual path (a child rejected, a later sibling
    accepted) occurs."""
    drafter, generator = branching(tiny, max_cached_requests=8), torch.Generator().manual_seed(0)
    settings = replace(DecodeSettings(temperature=0.8, top_k=5), k=3, max_new_tokens=4)
    seen = False
    for _ in range(200):
        for event in generate(tiny, drafter, PROMPT, settings, generator=generator).events:
            kept = {i for i, node in enumerate(event.tree) if node.kept}
            seen |= any(node.evaluated and not node.kept and any(event.tree[j].parent == node.parent for j in kept)
                        for node in event.tree)
    assert seen


def test_the_store_keeps_at_most_max_cached_requests_and_evicts_the_oldest():
    store = SuffixStore(limit=2)
    for request in range(3):
        store.record(request, None, [request] * 4)
    assert list(store.entries) == [1, 2]
    assert [output.tokens for output in store.visible(None, True, exclude=-1)] == [[1] * 4, [2] * 4]


def test_a_drafter_bounds_its_targets_store_to_max_cached_requests(lab):
    drafter = SuffixDrafter(lab.real_vocab_size, lab.device, lab.name, max_cached_requests=2)
    settings = DecodeSettings(k=4, max_new_tokens=8)
    for prompt in ("a = 1\n", "b = 2\n", "c = 3\n"):
        generate(lab, drafter, lab.encode(prompt), settings)
    assert len(suffix.STORES[lab.name].entries) == 2


def test_the_whole_output_reaches_the_store_when_a_run_ends(lab):
    drafter = registry.load_drafter("suffix", lab)
    run = generate(lab, drafter, lab.encode(CODE), DecodeSettings(k=8, max_new_tokens=40))
    assert [entry.output.tokens for entry in suffix.STORES[lab.name].entries.values()] == [run.token_ids]


def test_a_stopped_runs_output_reaches_the_store(lab):
    from specdec.engine.decoding import Generation

    run = Generation(lab, registry.load_drafter("suffix", lab), lab.encode(CODE), DecodeSettings(k=8, max_new_tokens=40))
    next(run), next(run)
    run.close()  # the Stop button
    assert [entry.output.tokens for entry in suffix.STORES[lab.name].entries.values()] == [run.token_ids]
    assert 0 < len(run.token_ids) < 40


SECRET = [7, 3, 9, 8, 6, 5, 2]


def learn(drafter: SuffixDrafter, prompt: list[int], output: list[int]) -> None:
    """One request whose output the drafter saw as it was generated."""
    drafter.start(prompt, 64)
    for n in range(1, len(output) + 1):
        drafter.propose_tree(prompt + output[:n], 6)


def drafted(drafter: SuffixDrafter, prompt: list[int]) -> list[int]:
    """The tokens a new request of `drafter` drafts after `prompt`."""
    drafter.start(prompt, 64)
    return drafter.propose_tree(prompt, 6).ids


def sessions(public: bool, monkeypatch, shared: bool = False):
    if public:
        monkeypatch.setattr(suffix, "public_source", lambda: True)
    if shared:
        monkeypatch.setenv(suffix.SHARED_STORE, "1")
    return [SuffixDrafter(16, torch.device("cpu"), "privacy-target", owner=owner) for owner in ("alice", "bob")]


def test_on_a_public_deployment_one_sessions_output_is_never_drafted_for_another(monkeypatch):
    alice, bob = sessions(True, monkeypatch)
    learn(alice, [1, 2], SECRET)
    assert set(drafted(bob, [0] + SECRET[:3])) & set(SECRET[3:]) == set()
    assert drafted(alice, [0] + SECRET[:3]) == SECRET[3:6]  # guard: her own session drafts it (3 matched, 3 drafted)


def test_an_operator_can_share_the_store_across_sessions_on_a_public_deployment(monkeypatch):
    alice, bob = sessions(True, monkeypatch, shared=True)
    learn(alice, [1, 2], SECRET)
    assert drafted(bob, [0] + SECRET[:3]) == SECRET[3:6]


def test_a_public_request_without_a_session_neither_records_nor_reads_the_store(monkeypatch):
    monkeypatch.setattr(suffix, "public_source", lambda: True)
    anonymous = SuffixDrafter(16, torch.device("cpu"), "privacy-target")
    learn(anonymous, [1, 2], SECRET)
    assert suffix.STORES["privacy-target"].entries == {}


def test_a_repeated_request_drafts_more_on_its_second_run(lab):
    ids = lab.encode(CODE)
    settings = DecodeSettings(k=8, max_new_tokens=40)
    drafter = registry.load_drafter("suffix", lab)
    first, second = (generate(lab, drafter, ids, settings).metrics for _ in range(2))
    assert second.tokens_per_forward > 1.5 * first.tokens_per_forward


def test_suffix_is_a_draft_name_with_a_how_it_works_paragraph():
    from specdec.drafters.families import families_markdown
    from specdec.planning.run import draft_names

    assert "suffix" in draft_names("lab-target") and "suffix" in draft_names("smollm2-135m-instruct")
    assert "(`suffix`)" in families_markdown()


def test_the_cost_model_prices_suffix_as_drafting_without_a_network():
    from specdec.measure import cost_model

    target = cost_model.Network("t", layers=2, hidden=8, heads=1, kv_heads=1, head_dim=8, intermediate=8,
                                head_rows=16)
    assert cost_model.draft_shape("suffix", target).network is None


def test_suffix_is_not_one_of_autos_candidates_without_a_model_card():
    from specdec.planning.auto import candidate_cards

    assert "suffix" not in candidate_cards(registry.drafter_specs("smollm2-135m-instruct"))
