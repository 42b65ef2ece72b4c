"""Broken verifiers, on purpose: teaching tools for the "Is it exact?" check (specdec/exactness/lossless.py).

Each one is verify.verify_sampled with one rule changed; the check runs the same test on it and on
the real verifier, so a learner sees the test fail when the rule is wrong. Never used for decoding.

Which drafter reveals which fault on the first one or two tokens (q is the drafter's distribution; a
deterministic drafter such as prompt lookup has a one-hot q at its drafted token d):
  always accept the draft    the output follows q, not p: every drafter, unless p(d) is close to 1
  resample from p            (no residual correction) d comes out with probability p(d)(2 - p(d))
                             under a one-hot q, so prompt lookup shows it only where p(d) is not tiny
                             (about 0.01 or more at 20,000 draws); a draft model whenever q differs from p
  invert the ratio (q/p)     under a one-hot q, q/p = 1/p(d) >= 1 accepts every draft: as "always
                             accept" for prompt lookup; a draft model whenever q differs from p
  one uniform for all        acceptance of consecutive drafts becomes correlated: only the second and
                             later tokens change, so it needs two tokens per draw and K >= 2
At temperature 0 verification keeps a drafted token exactly when it is the target's argmax, and only one of these
faults has a greedy form: "always accept the draft" keeps every drafted token there too, so greedy output stops being
the target's (broken_greedy_verifier). The others change how a sampled draft is accepted or corrected, which greedy
decoding never does: for them the greedy check runs the real rule and says so (VerifierChoice.greedy is None).
"Accept with p/q uncapped" is not among them: u < p/q and u < min(1, p/q) agree for every u < 1, so
the capped and uncapped rules draw the same tokens (only the reported acceptance probability differs).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from specdec.engine.verify import GreedyVerifier, SampledVerifier, Verdict, greedy_choices, verify_sampled
from specdec.errors import InvalidSettingsError

import torch


def broken_verifier(*, accept: str = "p/q", residual: str = "p-q", uniforms: str = "independent") -> SampledVerifier:
    """verify_sampled with one rule changed by a keyword (the defaults are the real rule):
    accept "p/q" | "q/p" | "always"; residual "p-q" | "p"; uniforms "independent" | "shared"."""
    def verifier(draft_ids: torch.Tensor, p: torch.Tensor, q: torch.Tensor, generator) -> Verdict:
        k = draft_ids.numel()
        rows = torch.arange(k, device=p.device)
        p_d, q_d = p[rows, draft_ids], q[rows, draft_ids]
        ratio = {"p/q": lambda: p_d / q_d, "q/p": lambda: q_d / p_d, "always": lambda: torch.ones_like(p_d)}[accept]
        accept_probs = ratio().clamp(max=1.0)
        if uniforms == "independent":
            draws = torch.rand(k, generator=generator, device=p.device)
        else:  # one draw decides every position
            draws = torch.rand(1, generator=generator, device=p.device).expand(k)
        n = int((draws < accept_probs).cumprod(dim=0).sum())
        if n < k:
            mass = (p[n] - q[n] if residual == "p-q" else p[n]).clamp(min=0)
            next_dist = mass / mass.sum() if mass.sum() > 0 else p[n]
        else:
            next_dist = p[k]
        next_token = int(torch.multinomial(next_dist, 1, generator=generator))
        evaluated = n + 1 if n < k else k
        return Verdict(n, accept_probs.tolist(), [u if i < evaluated else None for i, u in enumerate(draws.tolist())],
                       next_token, "bonus" if n == k else "resampled", next_dist)
    return verifier


def always_accept_greedy(draft_ids: list[int], target_logits: torch.Tensor) -> Verdict:
    """verify_greedy with its one rule broken: every drafted token is kept, whether or not it is the target's argmax;
    the target's own token follows the last of them (a bonus)."""
    k = len(draft_ids)
    return Verdict(num_accepted=k, accept_probs=[1.0] * k, uniforms=[None] * k,
                   next_token=greedy_choices(target_logits)[k], next_kind="bonus", next_distribution=None)


@dataclass(frozen=True)
class VerifierChoice:
    name: str
    verifier: SampledVerifier
    explanation: str  # one sentence: what it does wrong (or right)
    greedy: Optional[GreedyVerifier] = None  # its greedy form; None: the real greedy rule (the fault is sampling's)


REAL = "real verifier"
ALWAYS_ACCEPT = "always accept the draft"
CHOICES = {c.name: c for c in (
    VerifierChoice(REAL, verify_sampled, "accepts d with probability min(1, p(d)/q(d)) and corrects a rejection "
                                         "from norm(max(0, p − q)): the output follows p exactly"),
    VerifierChoice(ALWAYS_ACCEPT, broken_verifier(accept="always"),
                   "keeps every drafted token: the output follows the drafter's q, not the target's p (greedy: the "
                   "drafter's tokens, not the target's argmax)", greedy=always_accept_greedy),
    VerifierChoice("skip the residual correction (resample from p)", broken_verifier(residual="p"),
                   "after a rejection draws from p instead of norm(max(0, p − q)): drafted tokens come out too "
                   "often (with prompt lookup visible only where p(d) is not tiny)"),
    VerifierChoice("invert the acceptance ratio (q/p)", broken_verifier(accept="q/p"),
                   "accepts with min(1, q(d)/p(d)): with prompt lookup's one-hot q it accepts every draft"),
    VerifierChoice("one uniform draw for all positions", broken_verifier(uniforms="shared"),
                   "decides every drafted position with the same random number: only visible from the second "
                   "token on (two tokens per draw, K ≥ 2)"),
)}
BROKEN_DEFAULT = ALWAYS_ACCEPT  # visible with every drafter, prompt lookup included


def choose_verifier(name: str) -> VerifierChoice:
    choice = CHOICES.get(name)
    if choice is None:
        raise InvalidSettingsError(f"Unknown verifier {name!r}: choose one of {', '.join(CHOICES)}")
    return choice
