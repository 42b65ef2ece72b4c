"""EOS ends a generation at once, whoever produced it: an accepted draft, the target's resampled token,
the bonus token, or a plain target step; greedy or sampling. Nothing is emitted after it.

Deterministic cases use chain tables (TableModel.chain: one possible token after each token): from
the prompt [0, 1] the target continues 2, 3, EOS (7), and would go on with 5, 6, 0 if EOS were
ignored. Sampling with one-hot rows is as deterministic as greedy. The last tests sample from a
random table whose EOS comes by several paths (guarded), and compare whole outputs with the exact
law (outputs stop at their first EOS; chi-square, pass at p >= 0.001, 10,000 runs from generator
seed 0; a correct engine fails a given test with probability 0.001).
"""
from collections import Counter

from specdec import DecodeSettings, generate, start
from specdec.drafters.prompt_lookup import PromptLookupDrafter

import pytest
import torch

from tests.distribution import exact_output_law, output_p_value, sampled_outputs
from tests.table_model import TableModel

EOS = 7
VOCAB = 8
SUCCESSOR = {3: EOS, EOS: 5, 6: 0}  # otherwise t -> t + 1: 0 1 2 3 7 5 6 0 ...
TARGET = TableModel.chain("chain-target", VOCAB, SUCCESSOR, eos_token_ids=(EOS,))
WRONG_DRAFT = TableModel.chain("chain-draft", VOCAB, {**SUCCESSOR, 3: 4})  # proposes 4 where the target ends
PROMPT = [0, 1]
EXPECTED = [2, 3, EOS]
MODES = {"greedy": 0.0, "sampling": 1.0}


def lookup() -> PromptLookupDrafter:
    return PromptLookupDrafter(VOCAB, torch.device("cpu"))


def run(draft, prompt, k, mode, max_new_tokens=12):
    return generate(TARGET, draft, prompt, DecodeSettings(k=k, max_new_tokens=max_new_tokens, temperature=MODES[mode]))


def assert_stopped_at_eos(result):
    """The output ends with its first EOS, the last event says so, and no event came after it."""
    assert result.token_ids == EXPECTED
    last = result.events[-1]
    assert (last.finished, last.stop_reason) == (True, "eos")
    assert last.emitted_ids[-1] == EOS
    assert not any(event.finished for event in result.events[:-1])


# drafter -> (draft, prompt) making the drafted tokens [2, 3, EOS, 5] (K=4), [2, 3, 4, 5] (K=4), [2, 3] (K=2)
ACCEPTED_DRAFT = {"draft model": (TARGET, PROMPT), "prompt lookup": (lookup(), [0, 1, 2, 3, EOS, 5, 0, 1])}
CORRECTION = {"draft model": (WRONG_DRAFT, PROMPT), "prompt lookup": (lookup(), [0, 1, 2, 3, 4, 5, 0, 1])}
BONUS = {"draft model": (TARGET, PROMPT), "prompt lookup": (lookup(), [0, 1, 2, 3, 5, 0, 1])}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("drafter", list(ACCEPTED_DRAFT))
def test_eos_as_an_accepted_draft_stops_at_once(drafter, mode):
    draft, prompt = ACCEPTED_DRAFT[drafter]
    result = run(draft, prompt, 4, mode)
    assert_stopped_at_eos(result)
    last = result.events[-1]
    assert [t.token_id for t in last.drafted] == [2, 3, EOS, 5] and last.drafted[2].accepted
    assert last.final is None  # the bonus after the drafts was dropped with draft 4


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("drafter", list(CORRECTION))
def test_eos_as_the_targets_resampled_token_stops_at_once(drafter, mode):
    draft, prompt = CORRECTION[drafter]
    result = run(draft, prompt, 4, mode)
    assert_stopped_at_eos(result)
    last = result.events[-1]
    assert [t.token_id for t in last.drafted] == [2, 3, 4, 5] and not last.drafted[2].accepted
    assert (last.final.kind, last.final.token_id) == ("resampled", EOS)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("drafter", list(BONUS))
def test_eos_as_the_bonus_token_stops_at_once(drafter, mode):
    draft, prompt = BONUS[drafter]
    result = run(draft, prompt, 2, mode)
    assert_stopped_at_eos(result)
    last = result.events[-1]
    assert [t.token_id for t in last.drafted] == [2, 3] and last.num_accepted == 2
    assert (last.final.kind, last.final.token_id) == ("bonus", EOS)


@pytest.mark.parametrize("mode", MODES)
def test_eos_in_a_target_only_run_stops_at_once(mode):
    result = run(None, PROMPT, 4, mode)
    assert_stopped_at_eos(result)
    assert [e.final.kind for e in result.events] == ["target"] * 3


@pytest.mark.parametrize("mode", MODES)
def test_eos_from_a_plain_target_step_of_a_drafting_run_stops_at_once(mode):
    """Prompt lookup finds nothing to copy after [0, 1], so every step is the target's alone."""
    result = run(lookup(), PROMPT, 4, mode)
    assert_stopped_at_eos(result)
    assert [(e.k, e.final.kind) for e in result.events] == [(0, "target")] * 3


@pytest.mark.parametrize("mode", MODES)
def test_eos_as_the_last_allowed_token_is_reported_as_eos(mode):
    result = run(TARGET, PROMPT, 4, mode, max_new_tokens=3)
    assert_stopped_at_eos(result)


def test_a_generation_that_stopped_at_eos_yields_no_further_event():
    generation = start(TARGET, TARGET, PROMPT, DecodeSettings(k=1, max_new_tokens=12))
    events = list(generation)
    assert events[-1].stop_reason == "eos"
    assert next(generation, None) is None and generation.token_ids == EXPECTED


# --- sampling from random tables: EOS by every path, against the exact law ---------------------

SAMPLES = 10_000
P_VALUE_THRESHOLD = 1e-3
RANDOM_VOCAB = 6
RANDOM_TABLE = TableModel.random("table-target", RANDOM_VOCAB, seed=0)
EOS_SETTINGS = DecodeSettings(k=2, max_new_tokens=3, temperature=1.0)
# drafter -> (EOS id, prompt, the paths its EOS comes by in these runs; guarded below). For prompt
# lookup (proposing [2, 1] here) no EOS id and prompt of this table give all three paths in three
# tokens; its EOS as an accepted draft is covered by the deterministic tests above.
RANDOM_CASES = {
    "draft model": (0, [1, 4], ("accepted", "resampled", "bonus", "target")),
    "prompt lookup": (3, [1, 4, 2, 1, 4], ("resampled", "bonus", "target")),
}


def random_case(drafter: str):
    eos, prompt, paths = RANDOM_CASES[drafter]
    target = RANDOM_TABLE.with_eos(eos)
    draft = (target.perturbed("table-draft", noise=1.5, seed=1) if drafter == "draft model"
             else PromptLookupDrafter(RANDOM_VOCAB, torch.device("cpu")))
    return target, draft, eos, prompt, paths


@pytest.mark.parametrize("drafter", list(RANDOM_CASES))
def test_sampled_outputs_that_stop_at_eos_follow_the_target_law(drafter):
    target, draft, eos, prompt, _ = random_case(drafter)
    counts = sampled_outputs(target, draft, EOS_SETTINGS, SAMPLES, prompt, seed=0)
    law = exact_output_law(target.next_logits, EOS_SETTINGS, prompt, RANDOM_VOCAB, 3, (eos,))
    assert output_p_value(counts, law) >= P_VALUE_THRESHOLD


@pytest.mark.parametrize("drafter", list(RANDOM_CASES))
def test_sampled_eos_comes_by_every_path(drafter):
    """Guards the test above: EOS is emitted by each of the paths listed for the drafter, in at
    least 2% of the runs (200 of the 10,000)."""
    target, draft, _, prompt, expected = random_case(drafter)
    generator = torch.Generator().manual_seed(0)
    paths = Counter()
    for _ in range(1_000):
        last = list(start(target, draft, prompt, EOS_SETTINGS, generator=generator, top_n=0))[-1]
        if last.stop_reason == "eos":
            paths[last.final.kind if last.final is not None else "accepted"] += 1
    assert all(paths[kind] >= 20 for kind in expected), paths
