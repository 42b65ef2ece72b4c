"""Sampled speculative decoding draws from exactly the target's (warped) distribution.

Method: enumerate the target's exact joint distribution of the first two generated tokens
(with transformers' own warpers, as `generate` applies them), draw N speculative samples from
one seeded generator (K=3, 4 new tokens, so multi-token acceptance, resampling and bonus paths
all occur), and run a chi-square goodness-of-fit test. Threshold: p-value >= 0.001 passes.
A deliberately wrong verifier must fail the same test.

A correct engine fails a given seed with probability 0.001 per warping; the generator seed is fixed
so the suite is deterministic. (With seed 1234 the top-k case drew p = 1.7e-4 at 20,000 samples;
continuing that run to 150,000 samples gave p = 0.09, and temperature 1.0 at 150,000 gave p = 0.59:
chance, not bias.)
"""
from dataclasses import replace

from specdec import DecodeSettings
from specdec.engine.verify import Verdict

import pytest
import torch

import tests.distribution as distribution
from tests.stats import chi_square_p_value
from tests.switching import FlappingSchedule, decisions
from tests.table_model import TableModel

SAMPLES = 20_000
P_VALUE_THRESHOLD = 1e-3
VOCAB = 6
PROMPT = [1, 4]
WARPINGS = {
    "temperature 1.0": DecodeSettings(temperature=1.0),
    "temperature 0.7, top-p 0.9": DecodeSettings(temperature=0.7, top_p=0.9),
    "temperature 1.0, top-k 3": DecodeSettings(temperature=1.0, top_k=3),
}


def exact_first_two(next_logits, settings: DecodeSettings) -> torch.Tensor:
    return distribution.exact_first_two(next_logits, settings, PROMPT, VOCAB)


def speculative_counts(target, draft, settings: DecodeSettings, samples: int, **kwargs) -> torch.Tensor:
    return distribution.speculative_counts(target, draft, settings, samples, PROMPT, VOCAB, **kwargs)


def always_accept(draft_ids, p, q, generator) -> Verdict:
    """Wrong on purpose: keeps every drafted token, then a bonus token from p_K."""
    k = draft_ids.numel()
    return Verdict(k, [1.0] * k, [None] * k, int(torch.multinomial(p[k], 1, generator=generator)), "bonus", p[k])


@pytest.fixture(scope="module")
def models():
    target = TableModel.random("table-target", VOCAB, seed=0)
    return target, target.perturbed("table-draft", noise=1.5, seed=1)


@pytest.mark.parametrize("warping", list(WARPINGS))
def test_speculative_samples_follow_the_target_distribution(models, warping):
    target, draft = models
    settings = WARPINGS[warping]
    counts = speculative_counts(target, draft, settings, SAMPLES)
    expected = exact_first_two(target.next_logits, settings)
    assert counts[expected == 0].sum() == 0, "a token the warped target can never emit was emitted"
    assert chi_square_p_value(counts, expected) >= P_VALUE_THRESHOLD


def test_draft_distribution_differs_from_target(models):
    """Guards the test above against a draft so close that any verifier would pass."""
    target, draft = models
    settings = WARPINGS["temperature 1.0"]
    assert chi_square_p_value(speculative_counts(draft, None, settings, 5_000), exact_first_two(target.next_logits, settings)) < P_VALUE_THRESHOLD


def test_always_accepting_verifier_fails_the_same_test(models):
    target, draft = models
    settings = WARPINGS["temperature 1.0"]
    counts = speculative_counts(target, draft, settings, SAMPLES, sampled_verifier=always_accept)
    assert chi_square_p_value(counts, exact_first_two(target.next_logits, settings)) < P_VALUE_THRESHOLD


RUN_TOKENS = 10_000


@pytest.mark.parametrize("warping", ["temperature 1.0", "temperature 0.7, top-p 0.9"])
def test_every_token_follows_the_target_law_while_speculation_switches_off_and_on(models, warping):
    """One long run under the auto schedule's switching rule (tests/switching.py): speculative steps, plain
    steps while off and K = 1 probes; every token against the warped law of its two-token context."""
    target, draft = models
    settings = replace(WARPINGS[warping], k=3)
    tokens, events = distribution.long_run(target, draft, settings, RUN_TOKENS, PROMPT, seed=0,
                                           schedule=FlappingSchedule(3))
    assert decisions(events) == {"speculate", "off", "probe"}
    assert sum(e.decision == "off" for e in events) > 1000
    counts = distribution.transition_counts(PROMPT, tokens, VOCAB)
    assert distribution.transition_p_value(counts, distribution.exact_transitions(target, settings)) >= P_VALUE_THRESHOLD


def test_the_same_switching_run_with_an_always_accepting_verifier_fails(models):
    target, draft = models
    settings = replace(WARPINGS["temperature 1.0"], k=3)
    tokens, _ = distribution.long_run(target, draft, settings, RUN_TOKENS, PROMPT, seed=0,
                                      schedule=FlappingSchedule(3), sampled_verifier=always_accept)
    counts = distribution.transition_counts(PROMPT, tokens, VOCAB)
    assert distribution.transition_p_value(counts, distribution.exact_transitions(target, settings)) < P_VALUE_THRESHOLD
