"""Warping follows transformers' order (temperature, then top-k, then top-p) in every combination.

Order matters: top-p keeps a different nucleus before and after top-k, and before and after
temperature. The four cases of distribution.WARPING_CASES are checked three ways:
  - the reference law used by every distribution test is what `generate` itself samples from
    (its processed scores, on a tiny Llama);
  - the engine warps logits exactly like that reference;
  - every token of a long sampled target-only run (10,000 tokens) follows the reference law
    (chi-square of the next-token counts in each two-token context of a TableModel; a wrong order
    emits tokens the law forbids, which fails at once; pass at p >= 0.001). The
    speculative paths are tested at the same cases in test_distribution_paths.py.
Generator seed 0 for every case; a correct engine fails a given case with probability 0.001.
"""
from specdec import DecodeSettings, Generation
from specdec.engine.sampling import probabilities

import pytest
import torch
from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

import tests.distribution as distribution
from tests.distribution import (
    WARPING_CASES,
    exact_transitions,
    long_run,
    transition_counts,
    transition_p_value,
    warped_law,
)
from tests.table_model import TableModel
from tests.tiny_models import build_model, tiny_config

RUN_TOKENS = 10_000
P_VALUE_THRESHOLD = 1e-3
VOCAB = 6
PROMPT = [1, 4]
SEED = 0
TARGET = TableModel.random("table-target", VOCAB, seed=0)


def engine_warpers(settings: DecodeSettings):
    """The warpers a Generation with these settings applies to p and q."""
    return Generation(TARGET, None, PROMPT, settings).warpers


@pytest.fixture(scope="module")
def tiny_llama():
    return build_model(tiny_config("llama"), seed=0)


def wrong_orders(settings: DecodeSettings) -> dict[str, list]:
    """The wrong orders of transformers' warpers that can matter for these settings."""
    t, k, p = (TemperatureLogitsWarper(settings.temperature), TopKLogitsWarper(settings.top_k or 10**6),
               TopPLogitsWarper(settings.top_p or 1.0))
    orders = {}
    if settings.top_p and settings.top_k:
        orders["top-p before top-k"] = [t, p, k]
    if settings.top_p and settings.temperature != 1:
        orders["temperature after top-p"] = [k, p, t]
    return orders


def apply(warpers, scores: torch.Tensor) -> torch.Tensor:
    for warper in warpers:
        scores = warper(None, scores)
    return scores


@pytest.mark.parametrize("case", list(WARPING_CASES))
def test_reference_law_is_what_generate_samples_from(tiny_llama, case):
    """`generate`'s processed scores are the reference warping of its raw logits, and (guard) not
    what a wrong order would give."""
    settings = WARPING_CASES[case]
    prompt = torch.tensor([[3, 17, 42]])
    out = tiny_llama.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=True, max_new_tokens=12,
                              temperature=settings.temperature, top_k=settings.top_k or 0,
                              top_p=settings.top_p or 1.0, pad_token_id=0, output_scores=True, output_logits=True,
                              return_dict_in_generate=True)
    logits, scores = torch.cat(out.logits), torch.cat(out.scores)
    expected = distribution.reference_warpers(settings)(None, logits.clone())
    assert torch.equal(torch.isinf(expected), torch.isinf(scores)), "a different set of tokens survives"
    kept = ~torch.isinf(scores)
    assert torch.allclose(expected[kept], scores[kept], atol=1e-5)
    for name, order in wrong_orders(settings).items():
        assert not torch.equal(torch.isinf(apply(order, logits.clone())), torch.isinf(scores)), name


@pytest.mark.parametrize("case", list(WARPING_CASES))
def test_engine_warps_logits_like_the_reference(case):
    settings = WARPING_CASES[case]
    logits = torch.randn(500, VOCAB, generator=torch.Generator().manual_seed(0)) * 2.0
    engine = probabilities(logits, engine_warpers(settings)).double()
    reference = warped_law(settings)(logits)
    assert torch.equal(engine > 0, reference > 0), "a different set of tokens survives"
    assert torch.allclose(engine, reference, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in WARPING_CASES if WARPING_CASES[c].top_p])
def test_warping_cases_tell_the_orders_apart_on_the_table(case):
    """Guards the tests here and in test_distribution_paths.py: a wrong order changes the law in at
    least five of the table's 36 contexts."""
    settings = WARPING_CASES[case]
    right = exact_transitions(TARGET, settings).reshape(-1, VOCAB)
    for name, order in wrong_orders(settings).items():
        wrong = torch.softmax(apply(order, TARGET.table.reshape(-1, VOCAB).double()), dim=-1)
        differing = ((wrong - right).abs().sum(-1) > 1e-6).sum()
        assert differing >= 5, f"{name}: only {int(differing)} contexts differ"


@pytest.mark.parametrize("case", list(WARPING_CASES))
def test_every_token_of_a_sampled_target_only_run_follows_the_warped_law(case):
    settings = WARPING_CASES[case]
    tokens, _ = long_run(TARGET, None, settings, RUN_TOKENS, PROMPT, SEED)
    counts = transition_counts(PROMPT, tokens, VOCAB)
    assert transition_p_value(counts, exact_transitions(TARGET, settings)) >= P_VALUE_THRESHOLD
