"""Speculative decoding (and the target-only baseline) as a stream of StepEvents.

Invariants between steps, with seq = prompt + emitted tokens:
  - the target's cache holds seq[:-1]; seq[-1] is fed with the next step's drafts;
  - the drafter holds state for at most seq[:-1] (drafters/base.py defines its protocol); one that
    reads the target's hidden states has seen them for positions 0 .. len(seq) - 2.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterator, Optional

from specdec.engine.events import DecodeSettings, RunResult, StepEvent, TreeNode, check_settings
from specdec.engine.gate import GATE
from specdec.engine.metrics import measure_memory, start_memory_probe, summarize
from specdec.engine.proposals import ProposalContext, hidden_request
from specdec.engine.sampling import build_warpers, greedy_probabilities, probabilities
from specdec.engine.schedules import Decision, KSchedule, make_schedule
from specdec.engine.trace import drafted_tokens, final_token, top_tokens
from specdec.engine.tree import shown_nodes
from specdec.engine.verify import (
    GreedyVerifier,
    SampledVerifier,
    Verdict,
    greedy_choices,
    verify_greedy,
    verify_sampled,
    verify_tree_greedy,
    verify_tree_sampled,
)
from specdec.errors import InvalidSettingsError
from specdec.models.loading import LoadedModel
from specdec.models.prompting import check_context
from specdec.runners.threads import model_threads, threads_for_step

import torch

if TYPE_CHECKING:  # the engine calls drafters through engine/proposals.py's interface alone
    from specdec.drafters.base import Drafter


@dataclass
class ScoredStep:
    """One step's drafts and the target's verdict on them, before anything is emitted (emit_and_rollback).
    k = len(draft_ids): a chain's drafts, or the chain a tree step shows (its path, then the first rejected child)."""

    draft_ids: list[int]
    q: torch.Tensor  # [k, V] the drafter's probabilities of each draft (warped like p when sampling)
    p: torch.Tensor  # [k + 1, V] the target's at the same positions, then the bonus position (greedy: softmax of raw logits)
    verdict: Verdict
    draft_time_s: float
    verify_time_s: float
    nodes: list[TreeNode] = field(default_factory=list)  # a tree step's every node (events.TreeNode); [] for chains

    @property
    def k(self) -> int:
        return len(self.draft_ids)


class Generation:
    """Iterate for StepEvents as they happen; result() for text, ids, events and metrics.

    draft: None runs the target-only baseline through the same model-call code and warping; a
    Drafter proposes tokens (planning/run.start makes one of a draft model, or of `auto`'s plan).
    ignore_eos: run on past end-of-text tokens (timing baselines that must match another run's length);
    `eos_ids`, the ids that end the run, is public and may also be emptied before the first step.
    schedule: a KSchedule to use instead of settings.k_schedule's (a plan's auto schedule, probes, tests).
    label, plan: what the run reports as its draft and the plan that chose it (planning/run.py plans `auto`
    before a Generation exists); by default the drafter's own name and no plan.
    sampled_verifier, greedy_verifier: the verification rules (the real ones by default); the "Is it exact?" check
    passes a broken one on purpose (exactness/verifier_faults.py), never decoding.
    """

    def __init__(
        self,
        target: LoadedModel,
        draft,
        prompt_ids: list[int],
        settings: DecodeSettings = DecodeSettings(),
        *,
        generator: Optional[torch.Generator] = None,
        sampled_verifier: SampledVerifier = verify_sampled,
        greedy_verifier: Optional[GreedyVerifier] = None,
        top_n: int = 5,
        ignore_eos: bool = False,
        schedule: Optional[KSchedule] = None,
        label: Optional[str] = None,
        plan: Optional[dict] = None,
    ):
        check_settings(settings)
        self.target, self.settings = target, settings
        if draft is not None and not callable(getattr(draft, "propose", None)):
            raise TypeError(f"Generation needs a Drafter or None, not {type(draft).__name__}: start a run through "
                            "specdec.start (planning/run.py), which makes a draft model into its drafter")
        self.drafter: Optional[Drafter] = draft
        # what a drafter that learns across requests had learnt as this run starts (None for the others): the run's
        # record says so, and its timed repeats replay it (measure/speedup.py); taken before the engine's clock runs
        self.learned = draft.snapshot() if getattr(draft, "learns_across_requests", False) else None
        self.draft_label = label or (self.drafter.name if self.drafter is not None else None)
        self.plan = plan
        self.sampling = settings.mode == "sampling"
        if self.drafter is not None and self.drafter.greedy_only and self.sampling:
            raise InvalidSettingsError(
                f"{self.drafter.name} ({self.drafter.family}) supports greedy decoding only: set temperature to 0"
            )
        self.vocab_limit = self.drafter.vocab_limit if self.drafter is not None else target.real_vocab_size
        self.prompt_ids = _checked_prompt(prompt_ids, self.vocab_limit)
        check_context(target, len(self.prompt_ids), settings.max_new_tokens)
        self.warpers = build_warpers(settings)
        self.generator = generator or _seeded_generator(settings.seed, target.device)
        self.verify_sampled, self.broken_greedy = sampled_verifier, greedy_verifier
        self.top_n = top_n
        self.eos_ids = () if ignore_eos else target.eos_token_ids
        self.schedule = schedule or make_schedule(settings.k_schedule, settings.k)
        # a tree drafter drafts trees (tree.py); sampled trees need the real multi-candidate verifier, so a run
        # with another verifier (verifier_faults.py) chains
        self.drafts_tree = self.drafter is not None and self.drafter.tree_shape is not None and (
            sampled_verifier is verify_sampled if self.sampling else greedy_verifier is None)
        # target KV room beyond the run's own tokens: K drafts, or a tree's nodes
        self.verify_slots = max(self.settings.k, self.drafter.tree_shape.nodes if self.drafts_tree else 0)
        self.context = ProposalContext(self.sampling, self.warpers, self.generator, self.schedule.stop_below)
        self.events: list[StepEvent] = []
        self.token_ids: list[int] = []
        self.engine_time_s = 0.0  # excludes time the consumer spends between events
        self._target_runner = self._memory_probe = None
        self._steps = self._run()
        self._done = False

    @property
    def draft(self) -> Optional[Drafter]:
        return self.drafter

    def __iter__(self) -> Iterator[StepEvent]:
        return self

    def __next__(self) -> StepEvent:
        return next(self._steps)

    def close(self) -> None:
        """Stop early (the Stop button); result() then describes the tokens produced so far."""
        self._steps.close()

    def result(self) -> RunResult:
        if not self._done:
            for _ in self._steps:
                pass
        memory = measure_memory(self.target, self.drafter, self._target_runner, self._memory_probe, self.verify_slots)
        metrics = summarize(self.events, self.engine_time_s, self._target_runner, self.drafter, memory)
        return RunResult(
            prompt_ids=list(self.prompt_ids),
            token_ids=list(self.token_ids),
            text=self.target.decode(self.token_ids),
            events=self.events,
            metrics=metrics,
            settings=replace(self.settings, k_schedule=self.schedule.name) if self.schedule.name else self.settings,
            target_name=self.target.name,
            draft_name=self.draft_label,
            auto=self.plan,
            draft_family=self.drafter.family if self.drafter is not None else None,
            learned=self.learned,
        )

    # -- the loop ---------------------------------------------------------------------------

    def _run(self) -> Iterator[StepEvent]:
        self._memory_probe = start_memory_probe(self.target.device)  # before the run allocates its caches
        started = time.perf_counter()
        seq = list(self.prompt_ids)
        max_length = len(seq) + self.settings.max_new_tokens + self.verify_slots + 1
        target = self.target.new_runner(self.vocab_limit, max_length, keep_hidden=hidden_request(self.drafter))
        self._target_runner = target
        try:
            with GATE.stream() as stream:  # other users' timed pairs wait for this run (gate.py)
                yield from self._steps_after_prefill(target, seq, max_length, started, stream)
        finally:  # finished, stopped (close) or failed: the drafter sees the whole output once
            if self.drafter is not None:
                self.drafter.finish(list(self.prompt_ids) + self.token_ids)

    def _steps_after_prefill(self, target, seq: list[int], max_length: int, started: float, stream
                             ) -> Iterator[StepEvent]:
        with GATE.step() as waited, threads_for_step(self.target.device):
            prefill(target, self.drafter, seq, max_length)
        started += waited.s  # time spent waiting at the gate is not the engine's
        while True:
            remaining = self.settings.max_new_tokens - len(self.token_ids)
            planned = self.schedule.next_k() if self.drafter is not None else 0
            k = min(planned, remaining - 1)  # never overshoot max_new_tokens
            # one step at a time through the process's gate (gate.py); not across the yield below
            with GATE.step() as waited, threads_for_step(self.target.device):
                started += waited.s
                scored = self.score_step(seq, k, target)
                event = self.emit_and_rollback(scored, seq, target, remaining, planned, self.schedule.decision)
                # the step's target side as theory.py's v(K) counts it: verification and bookkeeping
                self.schedule.update(scored.k, min(scored.verdict.num_accepted + 1, scored.k),
                                     scored.verdict.num_accepted, scored.draft_time_s,
                                     event.verify_time_s + event.other_time_s)
            self.events.append(event)
            self.token_ids += event.emitted_ids
            seq += event.emitted_ids
            self.engine_time_s += time.perf_counter() - started
            self._done = event.finished
            if event.finished:
                stream.end()  # the run has ended, even if nobody asks for more (gate.py)
            yield event
            if event.finished:
                return
            started = time.perf_counter()

    @torch.inference_mode()
    def score_step(self, seq: list[int], k: int, target) -> ScoredStep:
        """Draft up to k tokens (a chain, or a tree of depth k) and let the target judge them in one forward."""
        if k <= 0:
            return self.plain_step(seq, target, time.perf_counter())
        if self.drafts_tree:
            return self.tree_step(seq, k, target)
        return self.chain_step(seq, k, target)

    def plain_step(self, seq: list[int], target, started: float) -> ScoredStep:
        """No drafts: one target token from a one-token forward (the baseline; a drafter that proposed nothing)."""
        drafted = time.perf_counter()
        logits = target.forward([seq[-1]])  # [1, V]
        verdict, p, q = self.verify_chain([], logits, None)
        return ScoredStep([], q, p, verdict, drafted - started, time.perf_counter() - drafted)

    def chain_step(self, seq: list[int], k: int, target) -> ScoredStep:
        """The drafter proposes up to k tokens; the target scores seq[-1] + drafts in one forward."""
        started = time.perf_counter()
        proposal = self.drafter.propose(seq, k, self.context)
        draft_ids = proposal.ids[:k]
        if not draft_ids:
            return self.plain_step(seq, target, started)
        drafted = time.perf_counter()
        logits = target.forward([seq[-1]] + draft_ids)  # [k + 1, V]
        verdict, p, q = self.verify_chain(draft_ids, logits, proposal.q)
        return ScoredStep(draft_ids, q, p, verdict, drafted - started, time.perf_counter() - drafted)

    def tree_step(self, seq: list[int], depth: int, target) -> ScoredStep:
        """The drafter proposes a tree (tree.py); the target scores every node in one forward, each seeing only
        its ancestors; the verifier walks it from the root (greedy: the target's choices; sampling:
        verify_tree_sampled) and the target keeps the cache rows of the path. The step shows the path and, after
        it, the first child that was rejected."""
        started = time.perf_counter()
        tree = self.drafter.propose_tree(seq, depth, self.context)
        if not tree.ids:
            return self.plain_step(seq, target, started)
        drafted = time.perf_counter()
        logits = target.forward_tree(seq[-1], tree.ids, tree.parents)  # [N + 1, V]: the root row, then each node's
        if self.sampling:
            p = probabilities(logits, self.warpers)  # [N + 1, V]
            path, evaluated, verdict = verify_tree_sampled(tree.ids, tree.parents, p, tree.q_rows, self.generator)
        else:
            path, evaluated, verdict = verify_tree_greedy(tree.ids, tree.parents, greedy_choices(logits))
        target.keep(len(seq) - 1, [0] + [1 + node for node in path])
        shown = shown_nodes(tree.parents, path)
        rows = torch.tensor([0] + [1 + node for node in shown], device=logits.device)
        p_shown = p[rows] if self.sampling else greedy_probabilities(logits[rows], self._threads(len(rows)))
        nodes = [TreeNode(token, self.target.token_text(token), parent, i in path, i in evaluated)
                 for i, (token, parent) in enumerate(zip(tree.ids, tree.parents))]
        return ScoredStep([tree.ids[i] for i in shown], tree.q_rows(shown), p_shown, verdict, drafted - started,
                          time.perf_counter() - drafted, nodes)

    def verify_chain(self, draft_ids: list[int], logits: torch.Tensor, q: Optional[torch.Tensor]):
        """(verdict, p [k + 1, V], q [k, V]) for k drafts scored by logits [k + 1, V] (raw); q: the drafter's
        rows [>= k, V], None when k = 0. Greedy p is the softmax of the raw logits; sampling p is warped."""
        q = logits.new_zeros((0, logits.shape[-1])) if not draft_ids else q[: len(draft_ids)]
        if not self.sampling:
            verdict = (self.broken_greedy or verify_greedy)(draft_ids, logits)
            return verdict, greedy_probabilities(logits, self._threads(len(logits))), q
        p = probabilities(logits, self.warpers)
        ids = torch.tensor(draft_ids, dtype=torch.long, device=logits.device)
        return self.verify_sampled(ids, p, q, self.generator), p, q

    def _threads(self, rows: int) -> int:
        """The kernels' thread count for work on this many target rows: the target's forwards' (threads.py)."""
        module = getattr(self.target, "model", None)  # None: a stand-in target (tests)
        return (model_threads(module, rows) if isinstance(module, torch.nn.Module) else None) or 1

    def emit_and_rollback(self, scored: ScoredStep, seq: list[int], target, remaining: int, planned: int,
                          decision: Optional[Decision] = None) -> StepEvent:
        """Emit the accepted drafts and the target's token (cut at EOS and max new tokens), roll the caches back
        to what the next step needs, and record the step (with the auto schedule's decision, when it made one)."""
        started = time.perf_counter()
        verdict, n = scored.verdict, scored.verdict.num_accepted
        emitted, stop_reason = cut_at_stop(scored.draft_ids[:n] + [verdict.next_token], self.eos_ids, remaining)
        if stop_reason is None:
            rollback(target, self.drafter, len(seq), n)
            stop_reason = "max_new_tokens" if len(emitted) >= remaining else None
        target_top = top_tokens(self.target, scored.p, self.top_n)  # one top-n per target row
        final = None
        if len(emitted) > n:
            kind = verdict.next_kind if scored.draft_ids else "target"
            final = final_token(self.target, verdict, scored.p, target_top[n], kind, self.sampling, self.top_n)
        drafted = drafted_tokens(self.target, scored.draft_ids, scored.p, scored.q, verdict, target_top, self.top_n)
        return StepEvent(
            index=len(self.events), mode=self.settings.mode, k=scored.k, drafted=drafted, num_accepted=n,
            final=final, emitted_ids=emitted, emitted_text="".join(self.target.token_text(t) for t in emitted),
            draft_time_s=scored.draft_time_s, verify_time_s=scored.verify_time_s,
            other_time_s=time.perf_counter() - started, finished=stop_reason is not None, stop_reason=stop_reason,
            k_planned=planned, tree=scored.nodes, decision=decision.kind if decision else "",
            decision_why=decision.why if decision else "", predicted_speedup=decision.predicted if decision else None,
        )


def prefill(target, drafter: Optional[Drafter], seq: list[int], max_length: int) -> None:
    """The target caches seq[:-1]; the drafter starts (and reads those positions' features)."""
    target.prefill(seq[:-1])
    if drafter is None:
        return
    drafter.start(seq, max_length)
    if drafter.reads_target_hidden and len(seq) > 1:
        drafter.observe(target.hidden)


def rollback(target, drafter: Optional[Drafter], seq_len: int, num_accepted: int) -> None:
    """Keep what the next step needs: target holds seq_new[:-1], the drafter at most that much.
    A drafter that reads features gets those of the confirmed positions (rows 0 .. num_accepted)."""
    keep = seq_len + num_accepted
    target.rollback(keep)
    if drafter is None:
        return
    drafter.rollback(keep)
    if drafter.reads_target_hidden:
        drafter.observe(target.hidden[: num_accepted + 1])


def cut_at_stop(candidates: list[int], eos_ids: tuple[int, ...], remaining: int) -> tuple[list[int], Optional[str]]:
    """Emit up to and including the first EOS; never more than `remaining` tokens."""
    for i, token in enumerate(candidates[:remaining]):
        if token in eos_ids:
            return candidates[: i + 1], "eos"
    return candidates[:remaining], None


def _checked_prompt(prompt_ids: list[int], vocab_limit: int) -> list[int]:
    ids = [int(i) for i in prompt_ids]
    if not ids:
        raise InvalidSettingsError("The prompt is empty: give at least one token")
    bad = [i for i in ids if not 0 <= i < vocab_limit]
    if bad:
        raise InvalidSettingsError(f"Prompt token ids out of range 0..{vocab_limit - 1}: {bad[:5]}")
    return ids


def _seeded_generator(seed: Optional[int], device: torch.device) -> torch.Generator:
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(int(seed))
    return generator
