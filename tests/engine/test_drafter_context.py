"""Target and drafter always continue exactly the emitted sequence (rollback and catch-up), checked
on TableModels, where the right continuation is known from the table.

Greedy output is the target's argmax chain whatever drafts; and the draft model's proposals are its
own continuation of the whole sequence, also right after an all-accepted step, when it must first
catch up on the last draft token and the bonus token it has not seen. (A drafter that loses track
stays exact, since the verifier only needs q to be what the draft was drawn from, but it drafts
badly; these tests see it.) Real-model greedy identity is in test_engine_greedy_identity.py.
"""
from specdec import DecodeSettings, generate
from specdec.drafters.prompt_lookup import PromptLookupDrafter

import pytest
import torch

from tests.distribution import warped_law
from tests.table_model import TableModel

VOCAB = 40
NEW_TOKENS = 60
PROMPT = [1, 4, 2, 1, 4]
TARGET = TableModel.random("table-target", VOCAB, seed=0)
DRAFT = TARGET.perturbed("table-draft", noise=1.0, seed=1)
TWIN = TableModel("table-twin", TARGET.table.clone())  # the target's own table as a separate draft


def argmax_chain(model: TableModel, seq: list[int], n: int) -> list[int]:
    seq = list(seq)
    for _ in range(n):
        seq.append(int(model.next_logits(seq).argmax()))
    return seq[-n:] if n else []


def steps_with_their_sequence(result):
    """(sequence before the step, event) for every step of a run."""
    seq = list(result.prompt_ids)
    for event in result.events:
        yield list(seq), event
        seq += event.emitted_ids


def drafter(name: str):
    return DRAFT if name == "draft model" else PromptLookupDrafter(VOCAB, torch.device("cpu"))


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("name", ["draft model", "prompt lookup"])
def test_greedy_output_is_the_targets_argmax_chain(name, k):
    result = generate(TARGET, drafter(name), PROMPT, DecodeSettings(k=k, max_new_tokens=NEW_TOKENS))
    assert result.token_ids == argmax_chain(TARGET, PROMPT, NEW_TOKENS)
    assert 0 < result.metrics.acceptance_rate < 1  # guard: accepted and rejected drafts both occur


def test_greedy_drafts_are_the_draft_models_continuation_of_the_whole_sequence():
    result = generate(TARGET, DRAFT, PROMPT, DecodeSettings(k=3, max_new_tokens=NEW_TOKENS))
    assert any(e.num_accepted == e.k for e in result.events[:-1])  # guard: catch-up steps occur
    for seq, event in steps_with_their_sequence(result):
        assert [t.token_id for t in event.drafted] == argmax_chain(DRAFT, seq, event.k)


def test_sampled_q_rows_are_the_draft_models_law_given_the_whole_sequence():
    settings = DecodeSettings(k=3, max_new_tokens=NEW_TOKENS, temperature=0.8, top_p=0.9)
    result = generate(TARGET, DRAFT, PROMPT, settings)
    law = warped_law(settings)
    assert any(e.num_accepted == e.k for e in result.events[:-1])  # guard: catch-up steps occur
    for seq, event in steps_with_their_sequence(result):
        for token in event.drafted:
            context = seq + [t.token_id for t in event.drafted[: token.position]]
            assert token.q == pytest.approx(float(law(DRAFT.next_logits(context))[token.token_id]), abs=1e-6)


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampling"])
def test_a_draft_equal_to_the_target_has_every_draft_accepted(temperature):
    result = generate(TARGET, TWIN, PROMPT, DecodeSettings(k=3, max_new_tokens=NEW_TOKENS, temperature=temperature))
    assert all(e.num_accepted == e.k for e in result.events)
