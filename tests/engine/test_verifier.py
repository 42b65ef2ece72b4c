"""The sampled verifier on hand-made distributions (verify.verify_sampled, no model involved).

Rows: P[0..2] are the target's rows at the positions of draft tokens 1, 2 and at the bonus
position; Q[0..1] the drafter's rows. Sampled checks draw 10,000 verdicts from one seeded generator
(seed 0) and pass a chi-square at p >= 0.001 against the law the rule gives; a correct verifier fails
a given test with probability 0.001. The verifier is looked up as `verify.verify_sampled` at call
time, so test_mutations.py can put known-wrong verifiers in its place.
"""
from specdec.engine import verify

import torch

from tests.stats import chi_square_p_value

SAMPLES = 10_000
P_VALUE_THRESHOLD = 1e-3
P = torch.tensor([
    [0.10, 0.40, 0.20, 0.30, 0.00],
    [0.25, 0.05, 0.30, 0.10, 0.30],
    [0.50, 0.10, 0.05, 0.15, 0.20],
])
Q = torch.tensor([
    [0.30, 0.20, 0.10, 0.20, 0.20],
    [0.10, 0.40, 0.20, 0.20, 0.10],
])
VOCAB = P.shape[-1]


def verdicts(draft_ids, p, q, samples=None):
    """`samples` verdicts for fixed drafts, from one seeded generator."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.tensor(draft_ids)
    return [verify.verify_sampled(ids, p, q, generator) for _ in range(samples or SAMPLES)]


def token_counts(tokens) -> torch.Tensor:
    return torch.bincount(torch.tensor(tokens, dtype=torch.long), minlength=VOCAB).double()


def follows(tokens, law: torch.Tensor) -> bool:
    counts = token_counts(tokens)
    assert counts[law == 0].sum() == 0, f"tokens of probability 0 were drawn: {counts.tolist()}"
    return chi_square_p_value(counts, law) >= P_VALUE_THRESHOLD


def one_hot(token: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor([token]), VOCAB).float()


# --- q = p: everything is accepted; the bonus comes from the row after the last draft -----------

def test_q_equal_to_p_accepts_every_draft():
    for verdict in verdicts([1, 2], P, P[:2].clone(), samples=200):
        assert (verdict.num_accepted, verdict.next_kind, verdict.accept_probs) == (2, "bonus", [1.0, 1.0])


def test_bonus_is_drawn_from_the_row_after_the_last_draft():
    results = verdicts([1, 2], P, P[:2].clone())
    assert torch.equal(results[0].next_distribution, P[2])
    assert follows([v.next_token for v in results], P[2])


def test_a_single_accepted_draft_gets_its_bonus_from_the_second_row():
    results = verdicts([3], P[:2], P[:1].clone())
    assert all(v.num_accepted == 1 for v in results)
    assert follows([v.next_token for v in results], P[1])


# --- acceptance: min(1, p(d) / q(d)), the first rejection ends the step -------------------------

def test_acceptance_probability_is_min_of_one_and_p_over_q():
    # position 0: p/q = 0.4/0.2 = 2 -> 1;  position 1: p/q = 0.05/0.4 = 0.125
    accept_probs = verdicts([1, 1], P, Q, samples=1)[0].accept_probs
    assert accept_probs == [1.0, torch.tensor(0.05 / 0.4).item()]


def test_a_draft_is_accepted_as_often_as_p_over_q():
    # p/q = 0.1/0.3 = 1/3 at position 0
    accepted = [v.num_accepted >= 1 for v in verdicts([0], P[:2], Q[:1])]
    counts = torch.tensor([sum(accepted), len(accepted) - sum(accepted)], dtype=torch.float64)
    assert chi_square_p_value(counts, torch.tensor([1 / 3, 2 / 3])) >= P_VALUE_THRESHOLD


def test_nothing_after_the_first_rejection_is_accepted():
    # position 0 can never be accepted (p = 0), position 1 always would be (p >= q)
    for verdict in verdicts([4, 0], P, Q, samples=200):
        assert (verdict.num_accepted, verdict.next_kind) == (0, "resampled")


# --- rejection: a draw from norm(max(0, p - q)) ---------------------------------------------------

RESIDUAL_0 = torch.tensor([0.0, 0.5, 0.25, 0.25, 0.0])  # norm(max(0, P[0] - Q[0]))


def test_a_draft_the_target_cannot_emit_is_always_rejected():
    for verdict in verdicts([4], P[:2], Q[:1], samples=200):
        assert (verdict.num_accepted, verdict.accept_probs) == (0, [0.0])


def test_the_resampled_token_is_drawn_from_the_normalised_positive_part_of_p_minus_q():
    results = verdicts([4], P[:2], Q[:1])
    assert torch.allclose(results[0].next_distribution, RESIDUAL_0)
    assert follows([v.next_token for v in results], RESIDUAL_0)


def test_the_resampled_token_after_an_accepted_draft_comes_from_the_second_rows():
    # token 3 at position 0 is always accepted (p >= q); token 4 at position 1 never (p = 0 < q)
    p = torch.stack([P[0], torch.tensor([0.25, 0.05, 0.30, 0.40, 0.00]), P[2]])
    results = verdicts([3, 4], p, Q)
    assert all(v.num_accepted == 1 for v in results)
    residual = (p[1] - Q[1]).clamp(min=0)
    assert follows([v.next_token for v in results], residual / residual.sum())


# --- a one-hot q (prompt lookup, re-tokenised text) ---------------------------------------------

def test_one_hot_q_accepts_the_draft_with_probability_p_of_the_draft():
    results = verdicts([3], P[:2], one_hot(3))
    assert results[0].accept_probs == [torch.tensor(0.3).item()]
    accepted = sum(v.num_accepted for v in results)
    counts = torch.tensor([accepted, len(results) - accepted], dtype=torch.float64)
    assert chi_square_p_value(counts, torch.tensor([0.3, 0.7])) >= P_VALUE_THRESHOLD


def test_one_hot_q_rejection_draws_from_p_without_the_drafted_token():
    rejected = [v.next_token for v in verdicts([3], P[:2], one_hot(3)) if v.num_accepted == 0]
    without = P[0].clone()
    without[3] = 0
    assert follows(rejected, without / without.sum())


# --- the rule as a whole: the k-th emitted token follows p_k ------------------------------------

def test_emitted_tokens_follow_p_position_by_position():
    """Drafts drawn from Q, verified: token 1 follows P[0]; token 2 (emitted when draft 1 was
    accepted) follows P[1]; token 3 (the bonus, when both were) follows P[2]."""
    generator = torch.Generator().manual_seed(0)
    by_position = [[], [], []]
    for _ in range(SAMPLES):
        drafts = torch.multinomial(Q, 1, generator=generator)[:, 0]
        verdict = verify.verify_sampled(drafts, P, Q, generator)
        emitted = drafts[: verdict.num_accepted].tolist() + [verdict.next_token]
        for position, token in enumerate(emitted):
            by_position[position].append(token)
    for position, tokens in enumerate(by_position):
        assert follows(tokens, P[position]), f"token {position + 1}"
