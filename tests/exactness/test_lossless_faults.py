"""The broken verifiers the "Is it exact?" tab offers (specdec/exactness/verifier_faults.py) and the statistics it reports
(specdec/exactness/chi_square.py)."""
from specdec.engine import verify
from specdec.errors import InvalidSettingsError
from specdec.exactness.chi_square import chi_square_p_value, total_variation
from specdec.exactness.verifier_faults import BROKEN_DEFAULT, CHOICES, REAL, broken_verifier, choose_verifier

import pytest
import torch


def random_rows(generator, k=3, vocab=6):
    p, q = torch.rand(k + 1, vocab, generator=generator), torch.rand(k, vocab, generator=generator)
    return p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)


def test_the_broken_verifier_without_a_change_draws_as_the_real_one():
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        p, q = random_rows(generator)
        drafts = torch.multinomial(q, 1, generator=generator)[:, 0]
        seed = int(torch.randint(0, 2**31, (1,), generator=generator))
        real = verify.verify_sampled(drafts, p, q, torch.Generator().manual_seed(seed))
        copy = broken_verifier()(drafts, p, q, torch.Generator().manual_seed(seed))
        assert (copy.num_accepted, copy.next_token, copy.accept_probs) == (real.num_accepted, real.next_token,
                                                                           real.accept_probs)


def test_the_real_choice_is_the_engines_verifier():
    assert choose_verifier(REAL).verifier is verify.verify_sampled


def test_always_accept_keeps_every_draft_even_one_the_target_cannot_emit():
    p, q = torch.tensor([[0.0, 1.0], [0.5, 0.5]]), torch.tensor([[1.0, 0.0]])
    verdict = choose_verifier("always accept the draft").verifier(torch.tensor([0]), p, q, torch.Generator())
    assert verdict.num_accepted == 1


def test_resampling_from_p_can_return_the_rejected_draft():
    p, q = torch.tensor([[0.5, 0.5], [0.5, 0.5]]), torch.tensor([[1.0, 0.0]])
    wrong = choose_verifier("skip the residual correction (resample from p)").verifier
    generator = torch.Generator().manual_seed(0)
    verdicts = [wrong(torch.tensor([0]), p, q, generator) for _ in range(200)]
    assert any(v.num_accepted == 0 and v.next_token == 0 for v in verdicts)


def test_the_default_broken_choice_is_one_every_drafter_reveals():
    assert BROKEN_DEFAULT == "always accept the draft" and BROKEN_DEFAULT in CHOICES


def test_an_unknown_verifier_is_refused_with_the_choices():
    with pytest.raises(InvalidSettingsError, match="real verifier"):
        choose_verifier("trust me")


def test_fair_counts_pass_the_chi_square():
    assert chi_square_p_value(torch.tensor([2500.0, 2480, 2530, 2490]), torch.full((4,), 0.25)) > 0.5


def test_biased_counts_fail_the_chi_square():
    assert chi_square_p_value(torch.tensor([2800.0, 2400, 2400, 2400]), torch.full((4,), 0.25)) < 1e-6


def test_the_chi_square_matches_the_five_percent_critical_value():
    observed = torch.tensor([5000 + 98.0, 5000 - 98.0])  # statistic 3.84, one degree of freedom
    assert chi_square_p_value(observed, torch.tensor([0.5, 0.5])) == pytest.approx(0.0497, abs=0.002)


def test_an_outcome_of_probability_zero_fails_outright():
    assert chi_square_p_value(torch.tensor([500.0, 499, 1]), torch.tensor([0.5, 0.5, 0.0])) == 0.0


def test_total_variation_is_half_the_l1_distance_of_the_frequencies():
    assert total_variation(torch.tensor([60.0, 40, 0]), torch.tensor([0.5, 0.3, 0.2])) == pytest.approx(0.2)
