"""The "Is it exact?" checks (specdec/exactness/lossless.py, specdec/exactness/first_tokens.py) on table models.

Sampling: the check passes with the real verifier and fails with each broken one (specdec/exactness/verifier_faults.py),
at a fixed seed, for the draft-model drafter (q spread out) and prompt lookup (q one-hot). Broken verifiers are
tested with two tokens per draw, where every one of them changes the law for both drafters (one uniform for all
positions changes only the second token). Greedy: identical runs, and a near-tie flipped by a verification
forward, reported where it happens with its likely cause.
"""
from dataclasses import replace

from specdec import DecodeSettings, Generation
from specdec.drafters.draft_model import as_drafter
from specdec.drafters.prompt_lookup import PromptLookupDrafter
from specdec.errors import InvalidSettingsError
from specdec.exactness.first_tokens import FirstTokens, SingleRow, compact_rows
from specdec.exactness.lossless import CHUNK, check_sampling, compare_greedy
from specdec.exactness.verifier_faults import ALWAYS_ACCEPT, CHOICES, REAL

import pytest
import torch

from tests.stats import chi_square_p_value
from tests.table_model import TableModel, TableRunner

VOCAB = 6
TARGET = TableModel.random("table-target", VOCAB, seed=0)
DRAFT = TARGET.perturbed("table-draft", noise=1.5, seed=1)
# prompt lookup proposes [2, 1, 4] after this prompt (the earlier [1, 4] was followed by 2, 1, 4)
PROMPTS = {"draft model": [1, 4], "prompt lookup": [1, 4, 2, 1, 4]}
DRAWS = {"draft model": 3_000, "prompt lookup": 10_000}  # prompt lookup drafts cheaply; its subtlest fault needs more
SETTINGS = DecodeSettings(temperature=1.0, k=3, max_new_tokens=8, seed=0)
BROKEN = [name for name in CHOICES if name != REAL]


def drafter(name: str):
    return DRAFT if name == "draft model" else PromptLookupDrafter(VOCAB, torch.device("cpu"))


DRAFT_DRAFTER = as_drafter(TARGET, DRAFT)  # the draft-model drafter, so a test can count its proposals


def finish(steps):
    """Runs a check generator to its end; its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def sampling(name: str, verifier: str = REAL, tokens: int = 2, target=TARGET, prompt=None, **kwargs):
    return finish(check_sampling(target, drafter(name), prompt or PROMPTS[name], SETTINGS, draws=DRAWS[name],
                                 tokens=tokens, verifier=verifier, **kwargs))


# --- sampling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("tokens", [1, 2])
@pytest.mark.parametrize("name", list(PROMPTS))
def test_the_real_verifier_passes(name, tokens):
    check = sampling(name, tokens=tokens)
    assert check.passed and check.p_value >= check.threshold and check.draws == DRAWS[name]


@pytest.mark.parametrize("name", list(PROMPTS))
def test_the_target_alone_passes_the_same_test(name):
    assert sampling(name, ALWAYS_ACCEPT).target_only_p_value >= 1e-3


@pytest.mark.parametrize("broken", BROKEN)
@pytest.mark.parametrize("name", list(PROMPTS))
def test_every_broken_verifier_fails(name, broken):
    check = sampling(name, broken)
    assert not check.passed and check.p_value < 1e-3


@pytest.mark.parametrize("name", list(PROMPTS))
def test_one_uniform_for_all_positions_is_invisible_on_the_first_token(name):
    assert sampling(name, "one uniform draw for all positions", tokens=1).passed


def test_the_first_step_drafts_and_scores_as_the_engine_does():
    settings = replace(SETTINGS, k=2)
    gen = Generation(TARGET, drafter("prompt lookup"), PROMPTS["prompt lookup"], settings)
    event = next(iter(Generation(TARGET, drafter("prompt lookup"), PROMPTS["prompt lookup"], settings)))
    first = FirstTokens(gen, tokens=2)
    finish(first.build_law(DRAWS["prompt lookup"]))
    step = first.step(())
    assert step.drafts == [d.token_id for d in event.drafted]
    assert step.p[:2, 0].tolist() == pytest.approx([d.p for d in event.drafted])


def test_compact_rows_keep_kept_tokens_and_the_mass_of_the_residual():
    generator = torch.Generator().manual_seed(0)
    p, q = torch.rand(3, 50, generator=generator), torch.rand(2, 50, generator=generator)
    p, q = p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)
    kept = [[7, 1, 2], [9], [3, 4]]
    small_p, small_q, columns = compact_rows(p, q, kept)
    for i, ids in enumerate(kept):
        assert small_p[i, : len(ids)].tolist() == p[i, ids].tolist() and columns[i][: len(ids)] == ids
        assert float(small_p[i].sum()) == pytest.approx(1.0)
    for i in range(2):
        assert small_q[i, : len(kept[i])].tolist() == q[i, kept[i]].tolist()
        residual = float((p[i] - q[i]).clamp(min=0).sum())
        assert float((small_p[i] - small_q[i]).clamp(min=0).sum()) == pytest.approx(residual)


def test_a_broken_verifier_piles_its_draws_on_the_drafted_token():
    table = TARGET.table.clone()
    table[4, 2, 1] = -30.0  # after ...4, 2 the target almost never says 1, which prompt lookup drafts
    rare = TableModel("rare-draft-target", table)
    check = sampling("prompt lookup", ALWAYS_ACCEPT, tokens=1, target=rare, prompt=[2, 1, 4, 2])
    bar = next(b for b in check.bars if b.tokens == ["<1>"])
    assert bar.speculative == check.draws and bar.exact < 1e-9 and bar.target_only == 0


def test_a_drafter_that_proposes_nothing_is_said_to_leave_nothing_to_verify():
    check = sampling("prompt lookup", ALWAYS_ACCEPT, tokens=1, prompt=[1, 4])
    assert check.drafted == [] and check.passed and "proposed nothing" in " ".join(check.notes)


def test_a_sampling_drafter_proposes_afresh_every_draw_and_says_so():
    check = finish(check_sampling(TARGET, drafter("draft model"), PROMPTS["draft model"], SETTINGS, draws=CHUNK))
    assert check.drafted is None and any("afresh for every draw" in n for n in check.notes)


def test_a_one_token_draft_is_proposed_once_per_prefix_and_drawn_afresh_from_its_row(monkeypatch):
    calls = []
    real_propose = DRAFT_DRAFTER.propose
    monkeypatch.setattr(DRAFT_DRAFTER, "propose", lambda *args: calls.append(1) or real_propose(*args))
    check = finish(check_sampling(TARGET, DRAFT_DRAFTER, PROMPTS["draft model"], SETTINGS,
                                  draws=DRAWS["draft model"], tokens=1))
    assert len(calls) == 1 and check.passed and check.draws == DRAWS["draft model"]


def test_a_one_token_drafts_draws_from_its_row_follow_the_row():
    q = torch.tensor([[0.0, 0.5, 0.0, 0.2, 0.3, 0.0]])  # ids of probability 0 first, between and last
    row, generator = SingleRow(q), torch.Generator().manual_seed(0)
    counts = torch.bincount(torch.tensor([row.draw(generator) for _ in range(20_000)]), minlength=6).double()
    assert counts[q[0] == 0].sum() == 0
    assert chi_square_p_value(counts[q[0] > 0], q[0][q[0] > 0].double()) >= 1e-3


def test_a_uniform_at_the_top_of_a_row_draws_its_last_possible_id_not_a_zero_one_after_it(monkeypatch):
    row = SingleRow(torch.tensor([[0.25, 0.75, 0.0]]))
    monkeypatch.setattr(torch, "rand", lambda *args, **kwargs: torch.ones(1, dtype=torch.float64))  # share = total
    assert row.draw(torch.Generator()) == 1


def test_a_greedy_only_drafter_is_refused_a_sampling_check_with_the_reason():
    lookup = drafter("prompt lookup")
    lookup.greedy_only = True
    with pytest.raises(InvalidSettingsError, match="greedy decoding only"):
        finish(check_sampling(TARGET, lookup, PROMPTS["prompt lookup"], SETTINGS, draws=CHUNK))


def test_stop_ends_the_draws_after_the_current_chunk():
    asked = iter([False])
    check = sampling("prompt lookup", tokens=1, should_stop=lambda: next(asked, True))
    assert check.stopped and check.draws == CHUNK


def test_greedy_settings_are_sampled_at_temperature_one_and_said_so():
    greedy_settings = replace(SETTINGS, temperature=0)
    check = finish(check_sampling(TARGET, drafter("draft model"), PROMPTS["draft model"], greedy_settings, draws=CHUNK))
    assert check.temperature == 1.0 and any("T = 1" in n for n in check.notes)


def test_every_draw_is_a_cell_or_the_pooled_rest():
    check = sampling("prompt lookup")
    assert sum(b.speculative for b in check.bars) == check.draws == sum(b.target_only for b in check.bars)
    assert check.bars[-1].label == "all other outcomes"


# --- greedy ------------------------------------------------------------------------------------

GAP = 1e-4  # after token 3 the chain's next token is 4, with 5 a hair behind


class NudgedRunner(TableRunner):
    """A forward over several tokens (a verification) nudges token 5 ahead, as reduced-precision rounding can."""

    def forward(self, ids):
        rows = super().forward(ids)
        if len(ids) > 1:
            rows = rows.clone()
            rows[:, 5] += 2 * GAP
        return rows


class NearTieChain(TableModel):
    def __init__(self, dtype):
        table = TableModel.chain("near-tie", VOCAB, {}).table
        table[:, 3, 5] = -GAP
        super().__init__("near-tie", table)
        self.dtype = dtype

    def new_runner(self, vocab_limit, max_length, keep_hidden=False):
        return NudgedRunner(self)


CHAIN_PROMPT = [0, 1, 2, 3, 4, 5, 0, 1]  # prompt lookup drafts 2, 3, 4 …


def greedy(target, name="prompt lookup", prompt=CHAIN_PROMPT):
    return finish(compare_greedy(target, drafter(name), prompt, replace(SETTINGS, max_new_tokens=12)))


@pytest.mark.parametrize("name", list(PROMPTS))
def test_greedy_runs_of_the_engine_are_identical(name):
    check = greedy(TARGET, name, PROMPTS[name])
    assert check.identical and check.speculative_ids == check.target_ids and check.cause.startswith("Identical")


def test_a_near_tie_flipped_by_verification_is_found_at_its_token():
    check = greedy(NearTieChain(torch.float32))
    assert check.target_ids[:3] == [2, 3, 4] and check.speculative_ids[:3] == [2, 3, 5]
    assert check.first_difference == 2


def test_a_float32_difference_at_a_near_tie_is_called_a_near_tie():
    assert greedy(NearTieChain(torch.float32)).cause.startswith("A near-tie")


def test_a_difference_in_reduced_precision_is_put_down_to_numerics():
    cause = greedy(NearTieChain(torch.bfloat16)).cause
    assert cause.startswith("Likely reduced-precision numerics") and "bfloat16" in cause


def test_always_accept_breaks_greedy_output_too():
    """The broken verifier's lesson holds at temperature 0: it keeps the draft model's tokens where they are not the
    target's argmax (the perturbed draft disagrees within a few tokens)."""
    check = finish(compare_greedy(TARGET, drafter("draft model"), PROMPTS["draft model"],
                                  replace(SETTINGS, max_new_tokens=12), verifier=ALWAYS_ACCEPT))
    assert not check.identical and check.verifier == ALWAYS_ACCEPT
    assert check.cause.startswith("The verifier keeps drafted tokens") and check.rule.startswith("Greedy, too")


def test_a_sampling_only_fault_says_the_greedy_check_ran_the_real_rule():
    check = finish(compare_greedy(TARGET, drafter("draft model"), PROMPTS["draft model"],
                                  replace(SETTINGS, max_new_tokens=12), verifier="one uniform draw for all positions"))
    assert check.identical and "ran the real rule" in check.rule and "guarantees" not in check.cause
