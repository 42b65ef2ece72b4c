"""Prompt lookup and every K schedule keep sampled outputs distributed exactly as the target's.

Method as in test_engine_distribution.py: chi-square of the first two generated tokens against the
enumerated law of the warped target, 20,000 draws from one seeded generator, pass at p >= 0.001.
The prompt repeats itself so prompt lookup proposes ([1, 4] -> [2, 1, 4]) and K=3 drafts occur.
"""
import itertools
from types import SimpleNamespace

from specdec import DecodeSettings
from specdec.drafters.prompt_lookup import PromptLookupDrafter
from specdec.engine import decoding
from specdec.engine.schedules import SCHEDULES
from specdec.engine.verify import verify_sampled

import pytest
import torch

from tests.distribution import exact_first_two, speculative_counts
from tests.stats import chi_square_p_value
from tests.table_model import TableModel

SAMPLES = 20_000
P_VALUE_THRESHOLD = 1e-3
VOCAB = 6
PROMPT = [1, 4, 2, 1, 4]
WARPINGS = {
    "temperature 1.0": DecodeSettings(temperature=1.0),
    "temperature 0.7, top-p 0.9": DecodeSettings(temperature=0.7, top_p=0.9),
}


@pytest.fixture(scope="module")
def target():
    return TableModel.random("table-target", VOCAB, seed=0)


def p_value(target, draft, settings, **kwargs) -> float:
    counts = speculative_counts(target, draft, settings, SAMPLES, PROMPT, VOCAB, **kwargs)
    expected = exact_first_two(target.next_logits, settings, PROMPT, VOCAB)
    assert counts[expected == 0].sum() == 0, "a token the warped target can never emit was emitted"
    return chi_square_p_value(counts, expected)


def lookup(target) -> PromptLookupDrafter:
    return PromptLookupDrafter(VOCAB, torch.device("cpu"))


@pytest.mark.parametrize("warping", list(WARPINGS))
def test_prompt_lookup_samples_follow_the_target_distribution(target, warping):
    assert p_value(target, lookup(target), WARPINGS[warping]) >= P_VALUE_THRESHOLD


def uniform_q(draft_ids, p, q, generator):
    """Wrong on purpose: verifies as if the lookup's proposal were uniform over the vocabulary."""
    return verify_sampled(draft_ids, p, torch.full_like(q, 1.0 / q.shape[-1]), generator)


def always_accept(draft_ids, p, q, generator):
    return verify_sampled(draft_ids, p, p.clone()[: draft_ids.numel()], generator)


@pytest.mark.parametrize("wrong", [uniform_q, always_accept], ids=["uniform q", "always accept"])
def test_prompt_lookup_with_a_wrong_verifier_fails_the_same_test(target, wrong):
    settings = WARPINGS["temperature 1.0"]
    assert p_value(target, lookup(target), settings, sampled_verifier=wrong) < P_VALUE_THRESHOLD


@pytest.fixture
def steady_clock(monkeypatch):
    """The engine's clock (decoding.py's, which times the steps the schedules read) advances 1 ms a reading. The
    optimal and auto schedules choose K from measured step times, so with the real clock the draws a run consumes,
    and so the test's p-value, changed from run to run (one CI run read 0.00037 where four repeats read 0.18-0.69);
    with this clock each test draws the same samples every run. Only that module's name is replaced: the process's
    own time.perf_counter, which other threads and libraries read, stays the real one."""
    ticks = itertools.count()
    monkeypatch.setattr(decoding, "time", SimpleNamespace(perf_counter=lambda: next(ticks) * 1e-3))


@pytest.mark.parametrize("warping", list(WARPINGS))
@pytest.mark.parametrize("schedule", [s for s in SCHEDULES if s != "constant"])
def test_every_k_schedule_samples_follow_the_target_distribution(target, schedule, warping, steady_clock):
    draft = target.perturbed("table-draft", noise=1.5, seed=1)
    settings = DecodeSettings(temperature=WARPINGS[warping].temperature, top_p=WARPINGS[warping].top_p,
                              k_schedule=schedule)
    assert p_value(target, draft, settings) >= P_VALUE_THRESHOLD
