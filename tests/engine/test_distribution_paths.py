"""Every way a sampled token is produced follows the target's law, for every drafter that samples.

A token is an accepted draft, a resampled token drawn from norm(max(0, p - q)) after a rejection, a bonus
drawn from the row after the last draft when all K were accepted, or a plain target step (K shrunk
to 0 near max_new_tokens, or nothing to propose). The tests, for the draft-model drafter and prompt
lookup (the re-tokenised drafter is greedy-only; its greedy identity is in test_drafters.py):
  - K=1 and two new tokens (temperature 1.0): the second token is the bonus whenever the draft was
    accepted; the joint law of both tokens is enumerated exactly;
  - K=2 and three new tokens (all three warpers): the whole output against its exact law (all K
    accepted: the third token is a bonus; a rejection: resampled tokens, then K shrinks and plain target
    steps follow);
  - one long run (K=3, 10,000 tokens) at each warping case of distribution.WARPING_CASES: every
    token against the warped law of its two-token context (hundreds to thousands of tokens by each
    path, guarded below).
Chi-square against enumeration, pass at p >= 0.001, 10,000 short runs or 10,000 tokens from one
seeded generator per test (seed 0); a correct engine fails a given test with probability 0.001.
"""
from dataclasses import replace

from specdec import DecodeSettings
from specdec.drafters.prompt_lookup import PromptLookupDrafter

import pytest
import torch

from tests.distribution import (
    WARPING_CASES,
    exact_output_law,
    exact_transitions,
    long_run,
    output_p_value,
    sampled_outputs,
    short_run_paths,
    token_paths,
    transition_counts,
    transition_p_value,
)
from tests.table_model import TableModel

SAMPLES = 10_000
RUN_TOKENS = 10_000
P_VALUE_THRESHOLD = 1e-3
VOCAB = 6
SEED = 0
TARGET = TableModel.random("table-target", VOCAB, seed=0)
DRAFT = TARGET.perturbed("table-draft", noise=1.5, seed=1)
# prompt lookup proposes [2, 1, 4] after this prompt (the earlier [1, 4] was followed by 2, 1, 4)
PROMPTS = {"draft model": [1, 4], "prompt lookup": [1, 4, 2, 1, 4]}
DRAFTERS = list(PROMPTS)
# short runs: K=1 at plain temperature (36 cells), K=2 at all three warpers (fewer, larger cells)
K1_SETTINGS = DecodeSettings(k=1, max_new_tokens=2, temperature=1.0)
ALL_THREE = WARPING_CASES["temperature 1.5, top-k 4, top-p 0.8"]
K2_SETTINGS = replace(ALL_THREE, k=2, max_new_tokens=3)


def drafter(name: str):
    return DRAFT if name == "draft model" else PromptLookupDrafter(VOCAB, torch.device("cpu"))


def short_run_p_value(name: str, settings: DecodeSettings) -> float:
    prompt = PROMPTS[name]
    counts = sampled_outputs(TARGET, drafter(name), settings, SAMPLES, prompt, SEED)
    return output_p_value(counts, exact_output_law(TARGET.next_logits, settings, prompt, VOCAB, settings.max_new_tokens))


@pytest.mark.parametrize("name", DRAFTERS)
def test_bonus_after_one_accepted_draft_follows_the_target_law(name):
    assert short_run_p_value(name, K1_SETTINGS) >= P_VALUE_THRESHOLD


@pytest.mark.parametrize("name", DRAFTERS)
def test_whole_output_of_a_short_run_follows_the_target_law(name):
    assert short_run_p_value(name, K2_SETTINGS) >= P_VALUE_THRESHOLD


@pytest.mark.parametrize("case", list(WARPING_CASES))
@pytest.mark.parametrize("name", DRAFTERS)
def test_every_token_of_a_long_run_follows_the_target_law(name, case):
    settings = replace(WARPING_CASES[case], k=3)
    prompt = PROMPTS[name]
    tokens, _ = long_run(TARGET, drafter(name), settings, RUN_TOKENS, prompt, SEED)
    counts = transition_counts(prompt, tokens, VOCAB)
    assert transition_p_value(counts, exact_transitions(TARGET, settings)) >= P_VALUE_THRESHOLD


# --- guards: the runs above reach every path often ----------------------------------------------

MIN_SHARE = 0.02  # of the tokens, for each path: about 200 or more of the 10,000 tokens of a long run


@pytest.mark.parametrize("settings", [K1_SETTINGS, K2_SETTINGS], ids=["K=1", "K=2"])
@pytest.mark.parametrize("name", DRAFTERS)
def test_short_runs_produce_accepted_corrected_and_bonus_tokens(name, settings):
    paths = short_run_paths(TARGET, drafter(name), settings, 500, PROMPTS[name], SEED)
    total = sum(paths.values())
    assert all(paths[kind] >= MIN_SHARE * total for kind in ("accepted", "resampled", "bonus")), paths


@pytest.mark.parametrize("case", list(WARPING_CASES))
@pytest.mark.parametrize("name", DRAFTERS)
def test_long_runs_produce_accepted_corrected_and_bonus_tokens(name, case):
    settings = replace(WARPING_CASES[case], k=3)
    _, events = long_run(TARGET, drafter(name), settings, 2_000, PROMPTS[name], SEED)
    paths = token_paths(events)
    assert all(paths[kind] >= MIN_SHARE * 2_000 for kind in ("accepted", "resampled", "bonus")), paths
