"""Mutation check: each known-wrong engine below must fail at least two correctness tests.

Every mutation is one plausible bug, applied alone through an injection point the engine already
has, never by editing it:
  - sampled verifiers: the default of Generation(sampled_verifier=...) and `verify.verify_sampled`
    (which test_verifier.py calls) are replaced by `mutant_verifier` with one rule changed;
  - decoding: the module-level functions specdec.engine.decoding uses (rollback, cut_at_stop,
    build_warpers, probabilities, verify_greedy) are wrapped;
  - the draft-model drafter: its runner skips the catch-up forward after an all-accepted step.
For each mutation the correctness tests named with it run in-process on the mutated engine, with
fewer samples (SAMPLES -> 1,000 runs or draws, RUN_TOKENS -> 2,000 tokens: these bugs move the law a
lot), and at least two must fail. The control test runs the same tests, at the same sizes, on the
unmutated engine and requires every one to pass, so a failure under a mutation is the bug's doing,
not too few samples. A test fails as under pytest: an assertion fails or the engine raises (the
control shows that nothing raises without the mutation).

`python -m tests.engine.test_mutations` prints the whole matrix (every mutation against every test below).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Optional

import specdec.engine.decoding as decoding
from specdec.drafters.draft_model import ModelDrafter
from specdec.engine import verify
from specdec.engine.decoding import Generation
from specdec.engine.verify import Verdict

import pytest
import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

REDUCED = {"SAMPLES": 1_000, "RUN_TOKENS": 2_000}


# --- the tests a mutation is run against ---------------------------------------------------------

@dataclass(frozen=True)
class Check:
    module: str
    test: str
    args: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.module}::{self.test}" + (f"[{'-'.join(map(str, self.args))}]" if self.args else "")

    def failure(self) -> Optional[str]:
        """Runs the test function at the reduced sizes: None when it passes, else how it failed
        (an assertion, or an exception the engine raised, as pytest would report either)."""
        module = importlib.import_module(f"tests.engine.{self.module}")
        with pytest.MonkeyPatch.context() as mp:
            for constant, value in REDUCED.items():
                if hasattr(module, constant):
                    mp.setattr(module, constant, value)
            try:
                getattr(module, self.test)(*self.args)
            except AssertionError:
                return "assertion"
            except Exception as error:  # noqa: BLE001 - a crash fails a test too
                return type(error).__name__
        return None


def paths(test, *args):
    return Check("test_distribution_paths", test, args)


VERIFIER = {name: Check("test_verifier", name) for name in (
    "test_q_equal_to_p_accepts_every_draft",
    "test_bonus_is_drawn_from_the_row_after_the_last_draft",
    "test_a_single_accepted_draft_gets_its_bonus_from_the_second_row",
    "test_acceptance_probability_is_min_of_one_and_p_over_q",
    "test_a_draft_is_accepted_as_often_as_p_over_q",
    "test_nothing_after_the_first_rejection_is_accepted",
    "test_a_draft_the_target_cannot_emit_is_always_rejected",
    "test_the_resampled_token_is_drawn_from_the_normalised_positive_part_of_p_minus_q",
    "test_the_resampled_token_after_an_accepted_draft_comes_from_the_second_rows",
    "test_one_hot_q_accepts_the_draft_with_probability_p_of_the_draft",
    "test_one_hot_q_rejection_draws_from_p_without_the_drafted_token",
    "test_emitted_tokens_follow_p_position_by_position",
)}
ALL_THREE = "temperature 1.5, top-k 4, top-p 0.8"
K1_BONUS = {d: paths("test_bonus_after_one_accepted_draft_follows_the_target_law", d)
            for d in ("draft model", "prompt lookup")}
SHORT_RUN = {d: paths("test_whole_output_of_a_short_run_follows_the_target_law", d)
             for d in ("draft model", "prompt lookup")}
LONG_RUN = {(d, case): paths("test_every_token_of_a_long_run_follows_the_target_law", d, case)
            for d in ("draft model", "prompt lookup")
            for case in ("temperature 0.7, top-k 3", "temperature 1.5, top-p 0.8", "top-k 3, top-p 0.7", ALL_THREE)}
WARP_UNIT = {case: Check("test_warpers", "test_engine_warps_logits_like_the_reference", (case,))
             for case in ("temperature 1.5, top-p 0.8", "top-k 3, top-p 0.7", ALL_THREE)}
TARGET_ONLY = {case: Check("test_warpers", "test_every_token_of_a_sampled_target_only_run_follows_the_warped_law", (case,))
               for case in ("temperature 1.5, top-p 0.8", "top-k 3, top-p 0.7", ALL_THREE)}
EOS = {
    **{f"{path}, {drafter}, {mode}": Check("test_eos", test, (drafter, mode))
       for path, test in (("accepted draft", "test_eos_as_an_accepted_draft_stops_at_once"),
                          ("resampled", "test_eos_as_the_targets_resampled_token_stops_at_once"),
                          ("bonus", "test_eos_as_the_bonus_token_stops_at_once"))
       for drafter in ("draft model", "prompt lookup") for mode in ("greedy", "sampling")},
    **{f"{path}, {mode}": Check("test_eos", test, (mode,))
       for path, test in (("target only", "test_eos_in_a_target_only_run_stops_at_once"),
                          ("plain step", "test_eos_from_a_plain_target_step_of_a_drafting_run_stops_at_once"),
                          ("last allowed", "test_eos_as_the_last_allowed_token_is_reported_as_eos"))
       for mode in ("greedy", "sampling")},
    "no further event": Check("test_eos", "test_a_generation_that_stopped_at_eos_yields_no_further_event"),
    **{f"sampled law, {drafter}": Check("test_eos", "test_sampled_outputs_that_stop_at_eos_follow_the_target_law",
                                        (drafter,)) for drafter in ("draft model", "prompt lookup")},
}
CONTEXT = {
    "greedy chain": Check("test_drafter_context", "test_greedy_output_is_the_targets_argmax_chain", ("draft model", 3)),
    "lookup greedy chain": Check("test_drafter_context", "test_greedy_output_is_the_targets_argmax_chain", ("prompt lookup", 3)),
    "greedy drafts": Check("test_drafter_context", "test_greedy_drafts_are_the_draft_models_continuation_of_the_whole_sequence"),
    "sampled q": Check("test_drafter_context", "test_sampled_q_rows_are_the_draft_models_law_given_the_whole_sequence"),
    "twin greedy": Check("test_drafter_context", "test_a_draft_equal_to_the_target_has_every_draft_accepted", (0.0,)),
    "twin sampling": Check("test_drafter_context", "test_a_draft_equal_to_the_target_has_every_draft_accepted", (1.0,)),
}
ALL_CHECKS = [*VERIFIER.values(), *K1_BONUS.values(), *SHORT_RUN.values(), *LONG_RUN.values(), *WARP_UNIT.values(),
              *TARGET_ONLY.values(), *EOS.values(), *CONTEXT.values()]


# --- known-wrong verifiers -----------------------------------------------------------------------

def mutant_verifier(*, bonus_row=0, ratio="p/q", residual="p-q", count="prefix", uniforms="independent"):
    """verify.verify_sampled with one rule changed by a keyword (the defaults are the real rule)."""
    def verifier(draft_ids, p, q, generator) -> Verdict:
        k = draft_ids.numel()
        rows = torch.arange(k, device=p.device)
        p_d, q_d = p[rows, draft_ids], q[rows, draft_ids]
        accept_probs = (p_d / q_d if ratio == "p/q" else q_d / p_d).clamp(max=1.0)
        if uniforms == "independent":
            draws = torch.rand(k, generator=generator, device=p.device)
        else:  # one draw decides every position
            draws = torch.rand(1, generator=generator, device=p.device).expand(k)
        accepted = draws < accept_probs
        n = int(accepted.cumprod(dim=0).sum()) if count == "prefix" else int(accepted.sum())
        if n < k:
            diff = {"p-q": p[n] - q[n], "q-p": q[n] - p[n], "p": p[n]}[residual].clamp(min=0)
            next_dist = diff / diff.sum() if diff.sum() > 0 else p[n]
        else:
            next_dist = p[k + bonus_row]
        next_token = int(torch.multinomial(next_dist, 1, generator=generator))
        checked = n + 1 if n < k else k
        return Verdict(n, accept_probs.tolist(), [u if i < checked else None for i, u in enumerate(draws.tolist())],
                       next_token, "bonus" if n == k else "resampled", next_dist)
    return verifier


def use_verifier(mp: pytest.MonkeyPatch, wrong) -> None:
    mp.setattr(verify, "verify_sampled", wrong)
    mp.setitem(Generation.__init__.__kwdefaults__, "sampled_verifier", wrong)


# --- known-wrong decoding ------------------------------------------------------------------------

def wrap(mp: pytest.MonkeyPatch, module, name: str, make: Callable) -> None:
    mp.setattr(module, name, make(getattr(module, name)))


def eos_only_from_drafts(real):
    """EOS ignored when it is the target's own token (resampled, bonus, plain target step)."""
    def cut(candidates, eos_ids, remaining):
        emitted, reason = real(candidates[:-1], eos_ids, remaining)
        return (emitted, reason) if reason else (candidates[:remaining], None)
    return cut


def one_token_after_eos(real):
    def cut(candidates, eos_ids, remaining):
        emitted, reason = real(candidates, eos_ids, remaining)
        return (candidates[: len(emitted) + 1], reason) if reason else (emitted, reason)
    return cut


def eos_dropped(real):
    def cut(candidates, eos_ids, remaining):
        emitted, reason = real(candidates, eos_ids, remaining)
        return (emitted[:-1], reason) if reason else (emitted, reason)
    return cut


def rollback_off_by(offset: int):
    def make(real):
        return lambda target, drafter, seq_len, num_accepted: real(target, drafter, seq_len + offset, num_accepted)
    return make


def warpers_in_order(*order):
    def make(real):
        def build(settings):
            return LogitsProcessorList(sorted(real(settings), key=lambda w: order.index(type(w))))
        return build
    return make


def target_not_warped(real):
    def probabilities(logits, warpers):
        return real(logits, LogitsProcessorList())
    return probabilities


def greedy_bonus_from_last_draft_row(real):
    def verify_greedy(draft_ids, logits):
        verdict = real(draft_ids, logits)
        if draft_ids and verdict.num_accepted == len(draft_ids):
            verdict.next_token = int(logits[len(draft_ids) - 1].argmax())
        return verdict
    return verify_greedy


def greedy_accepts_the_first_mismatch(real):
    def verify_greedy(draft_ids, logits):
        verdict = real(draft_ids, logits)
        n = verdict.num_accepted
        if n < len(draft_ids):
            verdict.num_accepted = n + 1
            verdict.next_token = int(logits[n + 1].argmax())
            verdict.next_kind = "bonus" if n + 1 == len(draft_ids) else "resampled"
        return verdict
    return verify_greedy


def skip_draft_catch_up(mp: pytest.MonkeyPatch) -> None:
    """After an all-accepted step the draft model feeds only the bonus token, never d_K."""
    real = ModelDrafter.propose

    def propose(self, seq, k, context):
        runner, forward = self.runner, self.runner.forward

        def newest_only(ids):
            del runner.forward  # back to the real method for the drafting forwards
            return forward(ids[-1:])

        runner.forward = newest_only
        try:
            return real(self, seq, k, context)
        finally:
            runner.__dict__.pop("forward", None)

    mp.setattr(ModelDrafter, "propose", propose)


T, TOP_K, TOP_P = TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
MUTATIONS: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], list[Check]]] = {
    "bonus drawn from the last draft row": (
        lambda mp: use_verifier(mp, mutant_verifier(bonus_row=-1)),
        [VERIFIER["test_bonus_is_drawn_from_the_row_after_the_last_draft"],
         VERIFIER["test_a_single_accepted_draft_gets_its_bonus_from_the_second_row"],
         K1_BONUS["draft model"], K1_BONUS["prompt lookup"]]),
    "acceptance ratio inverted (q/p)": (
        lambda mp: use_verifier(mp, mutant_verifier(ratio="q/p")),
        [VERIFIER["test_acceptance_probability_is_min_of_one_and_p_over_q"],
         VERIFIER["test_a_draft_the_target_cannot_emit_is_always_rejected"], LONG_RUN[("draft model", ALL_THREE)]]),
    "residual replaced by p": (
        lambda mp: use_verifier(mp, mutant_verifier(residual="p")),
        [VERIFIER["test_the_resampled_token_is_drawn_from_the_normalised_positive_part_of_p_minus_q"],
         VERIFIER["test_one_hot_q_rejection_draws_from_p_without_the_drafted_token"],
         LONG_RUN[("draft model", ALL_THREE)]]),
    "residual max(0, q - p)": (
        lambda mp: use_verifier(mp, mutant_verifier(residual="q-p")),
        [VERIFIER["test_the_resampled_token_is_drawn_from_the_normalised_positive_part_of_p_minus_q"],
         VERIFIER["test_the_resampled_token_after_an_accepted_draft_comes_from_the_second_rows"],
         LONG_RUN[("draft model", ALL_THREE)]]),
    "drafts after a rejection still counted": (
        lambda mp: use_verifier(mp, mutant_verifier(count="sum")),
        [VERIFIER["test_nothing_after_the_first_rejection_is_accepted"],
         VERIFIER["test_emitted_tokens_follow_p_position_by_position"], LONG_RUN[("draft model", ALL_THREE)]]),
    "one uniform draw for every position": (
        lambda mp: use_verifier(mp, mutant_verifier(uniforms="shared")),
        [VERIFIER["test_emitted_tokens_follow_p_position_by_position"], LONG_RUN[("draft model", ALL_THREE)],
         LONG_RUN[("prompt lookup", ALL_THREE)]]),
    "EOS ignored when it is the target's own token": (
        lambda mp: wrap(mp, decoding, "cut_at_stop", eos_only_from_drafts),
        [EOS["resampled, draft model, greedy"], EOS["bonus, prompt lookup, sampling"], EOS["target only, sampling"],
         EOS["plain step, greedy"], EOS["sampled law, draft model"]]),
    "a token emitted after EOS": (
        lambda mp: wrap(mp, decoding, "cut_at_stop", one_token_after_eos),
        [EOS["accepted draft, draft model, sampling"], EOS["accepted draft, prompt lookup, greedy"],
         EOS["sampled law, draft model"]]),
    "EOS itself not emitted": (
        lambda mp: wrap(mp, decoding, "cut_at_stop", eos_dropped),
        [EOS["accepted draft, prompt lookup, greedy"], EOS["bonus, draft model, sampling"], EOS["target only, greedy"]]),
    "rollback keeps one token too many": (
        lambda mp: wrap(mp, decoding, "rollback", rollback_off_by(+1)),
        [CONTEXT["greedy chain"], CONTEXT["lookup greedy chain"], K1_BONUS["draft model"]]),
    "rollback keeps one token too few": (
        lambda mp: wrap(mp, decoding, "rollback", rollback_off_by(-1)),
        [CONTEXT["greedy chain"], CONTEXT["lookup greedy chain"], K1_BONUS["draft model"]]),
    "draft catch-up skipped after an all-accepted step": (
        skip_draft_catch_up,
        [CONTEXT["greedy drafts"], CONTEXT["sampled q"], CONTEXT["twin greedy"], CONTEXT["twin sampling"]]),
    "top-p before top-k": (
        lambda mp: wrap(mp, decoding, "build_warpers", warpers_in_order(T, TOP_P, TOP_K)),
        [WARP_UNIT["top-k 3, top-p 0.7"], WARP_UNIT[ALL_THREE], TARGET_ONLY["top-k 3, top-p 0.7"],
         LONG_RUN[("draft model", "top-k 3, top-p 0.7")]]),
    "temperature after top-p": (
        lambda mp: wrap(mp, decoding, "build_warpers", warpers_in_order(TOP_K, TOP_P, T)),
        [WARP_UNIT["temperature 1.5, top-p 0.8"], WARP_UNIT[ALL_THREE], TARGET_ONLY["temperature 1.5, top-p 0.8"],
         LONG_RUN[("prompt lookup", "temperature 1.5, top-p 0.8")]]),
    "the target's rows not warped": (
        lambda mp: wrap(mp, decoding, "probabilities", target_not_warped),
        [TARGET_ONLY[ALL_THREE], LONG_RUN[("draft model", ALL_THREE)], LONG_RUN[("prompt lookup", ALL_THREE)]]),
    "greedy bonus from the last draft row": (
        lambda mp: wrap(mp, decoding, "verify_greedy", greedy_bonus_from_last_draft_row),
        [CONTEXT["greedy chain"], CONTEXT["lookup greedy chain"], EOS["bonus, draft model, greedy"]]),
    "greedy accepts the first mismatching draft": (
        lambda mp: wrap(mp, decoding, "verify_greedy", greedy_accepts_the_first_mismatch),
        [CONTEXT["greedy chain"], CONTEXT["lookup greedy chain"], EOS["resampled, draft model, greedy"]]),
}


def failing(checks: list[Check]) -> list[str]:
    """The checks that fail, each named with how ("assertion" or the exception raised)."""
    results = [(check.name, check.failure()) for check in checks]
    return [f"{name} ({how})" for name, how in results if how is not None]


def test_mutant_verifier_without_a_change_is_the_real_verifier():
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        p, q = torch.rand(4, 6, generator=generator), torch.rand(3, 6, generator=generator)
        p, q = p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)
        drafts = torch.multinomial(q, 1, generator=generator)[:, 0]
        seed = int(torch.randint(0, 2**31, (1,), generator=generator))
        real = verify.verify_sampled(drafts, p, q, torch.Generator().manual_seed(seed))
        copy = mutant_verifier()(drafts, p, q, torch.Generator().manual_seed(seed))
        assert (copy.num_accepted, copy.next_token, copy.next_kind) == (real.num_accepted, real.next_token, real.next_kind)
        assert copy.accept_probs == real.accept_probs and torch.equal(copy.next_distribution, real.next_distribution)


def test_every_check_passes_on_the_unmutated_engine():
    checks = list(dict.fromkeys(check for _, listed in MUTATIONS.values() for check in listed))
    assert failing(checks) == []


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_each_bug_fails_at_least_two_correctness_tests(mutation):
    apply, checks = MUTATIONS[mutation]
    with pytest.MonkeyPatch.context() as mp:
        apply(mp)
        failed = failing(checks)
    assert len(failed) >= 2, f"{mutation}: only {failed} of {[c.name for c in checks]} failed"


def matrix() -> None:
    """Every mutation against every check (reduced sizes), printed as counts and names; first the
    control (every check must pass unmutated, else the counts below mean nothing)."""
    print(f"control: {failing(ALL_CHECKS) or 'every check passes'}", flush=True)
    for mutation, (apply, _) in MUTATIONS.items():
        with pytest.MonkeyPatch.context() as mp:
            apply(mp)
            failed = failing(ALL_CHECKS)
        print(f"{len(failed):3d}/{len(ALL_CHECKS)}  {mutation}", flush=True)
        for name in failed:
            print(f"        {name}", flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    matrix()
