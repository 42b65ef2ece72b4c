"""Speculative decoding (and the target-only baseline) as a stream of StepEvents.

Invariants between steps, with seq = prompt + emitted tokens:
  - the target's cache holds seq[:-1]; seq[-1] is fed with the next step's drafts;
  - the drafter holds state for at most seq[:-1] (drafters/base.py defines its protocol); one that
    reads the target's hidden states has seen them for positions 0 .. len(seq) - 2.
"""
from __future__ import annotations

import time
from typing import Iterator, Optional

import torch

from .drafters.base import Drafter, Proposal, ProposalContext
from .drafters.registry import as_drafter
from .events import DecodeSettings, RunResult, StepEvent, TreeNode
from .errors import InvalidSettingsError
from .loading import LoadedModel
from .metrics import measure_memory, start_memory_probe, summarize
from .prompting import check_context
from .sampling import build_warpers, probabilities, validate
from .schedules import KSchedule, make_schedule
from .trace import build_event, final_token, top_tokens
from .threads import threads_for_step
from .tree import greedy_path, shown_nodes
from .verify import SampledVerifier, Verdict, verify_greedy, verify_sampled, verify_tree_sampled


class Generation:
    """Iterate for StepEvents as they happen; result() for text, ids, events and metrics.

    draft: None runs the target-only baseline through the same model-call code and warping; a
    Drafter proposes tokens; a LoadedModel is the draft-model drafter (same tokenizer).
    ignore_eos: run on past end-of-text tokens (timing baselines that must match another run's length);
    `eos_ids`, the ids that end the run, is public and may also be emptied before the first step.
    A drafter with a `plan(prompt_ids, settings)` (the `auto` drafter, drafters/auto.py) is asked for an
    auto_choice.AutoChoice first and replaced by the drafter it chose, run under the auto schedule from the
    choice's prior (`choice`). schedule: a KSchedule to use instead of settings.k_schedule's (probes, tests).
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
        top_n: int = 5,
        ignore_eos: bool = False,
        schedule: Optional[KSchedule] = None,
    ):
        validate(settings)
        self.target, self.settings = target, settings
        self.drafter: Optional[Drafter] = as_drafter(target, draft)
        self.draft_label = self.drafter.name if self.drafter is not None else None
        self.choice, prior, schedule_name = None, None, settings.k_schedule
        if hasattr(self.drafter, "plan"):
            self.choice, self.drafter, prior = self.drafter.plan(prompt_ids, settings)
            schedule_name = "auto"
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
        self.verify_sampled = sampled_verifier
        self.top_n = top_n
        self.eos_ids = () if ignore_eos else target.eos_token_ids
        self.schedule = schedule or make_schedule(schedule_name, settings.k, prior)
        # a tree drafter drafts trees (tree.py); sampled trees need the real multi-candidate verifier, so a run
        # with another verifier (verifier_faults.py) chains
        self.drafts_tree = getattr(self.drafter, "tree_shape", None) is not None and (
            not self.sampling or sampled_verifier is verify_sampled)
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
            settings=self.settings,
            target_name=self.target.name,
            draft_name=self.draft_label,
            auto=self.choice.to_dict() if self.choice is not None else None,
        )

    # -- the loop ---------------------------------------------------------------------------

    def _run(self) -> Iterator[StepEvent]:
        self._memory_probe = start_memory_probe(self.target.device)  # before the run allocates its caches
        started = time.perf_counter()
        seq = list(self.prompt_ids)
        max_length = len(seq) + self.settings.max_new_tokens + self.verify_slots + 1
        reads_hidden = self.drafter is not None and self.drafter.reads_target_hidden
        target = self.target.new_runner(self.vocab_limit, max_length, keep_hidden=reads_hidden)
        self._target_runner = target
        self.drafts_tree = self.drafts_tree and hasattr(target, "forward_tree")  # a runner without trees: chains
        with threads_for_step(self.target.device):
            prefill(target, self.drafter, seq, max_length)
        while True:
            remaining = self.settings.max_new_tokens - len(self.token_ids)
            planned = self.schedule.next_k() if self.drafter is not None else 0
            k = min(planned, remaining - 1)  # never overshoot max_new_tokens
            with threads_for_step(self.target.device):  # not across the yield below
                event = self._step(len(self.events), k, seq, target, remaining)
            event.k_planned = planned
            record_decision(event, self.schedule.decision)
            self.events.append(event)
            self.token_ids += event.emitted_ids
            seq += event.emitted_ids
            if len(self.token_ids) >= self.settings.max_new_tokens and not event.finished:
                event.finished, event.stop_reason = True, "max_new_tokens"
            self.engine_time_s += time.perf_counter() - started
            if event.finished:
                self._done = True
            yield event
            if event.finished:
                return
            started = time.perf_counter()

    @torch.inference_mode()
    def _step(self, index: int, k: int, seq: list[int], target, remaining: int) -> StepEvent:
        t0 = time.perf_counter()
        tree: list[TreeNode] = []
        if k > 0 and self.drafts_tree:
            draft_ids, q, logits, tree, t1, decided = self._tree_draft_and_score(seq, k, target)
        else:
            proposal = self.drafter.propose(seq, k, self.context) if k > 0 else Proposal()
            draft_ids, q, decided = proposal.ids[:k], proposal.q, None
            t1 = time.perf_counter()
            logits = target.forward([seq[-1]] + draft_ids)  # [k+1, V]
        verdict, p, q = self._verify(draft_ids, logits, q, decided)
        t2 = time.perf_counter()
        emitted, stop_reason = cut_at_stop(
            draft_ids[: verdict.num_accepted] + [verdict.next_token], self.eos_ids, remaining
        )
        if stop_reason is None:
            rollback(target, self.drafter, len(seq), verdict.num_accepted)
        target_top = top_tokens(self.target, p, self.top_n)  # one top-n per target row, drafts and final alike
        final = None
        if len(emitted) > verdict.num_accepted:
            kind = "target" if not draft_ids else verdict.next_kind
            final = final_token(self.target, verdict, p, target_top[verdict.num_accepted], kind, self.sampling, self.top_n)
        event = build_event(
            model=self.target, index=index, sampling=self.sampling, draft_ids=draft_ids, p=p, q=q,
            verdict=verdict, target_top=target_top, final=final, emitted=emitted, times=(t1 - t0, t2 - t1, 0.0),
            stop_reason=stop_reason, top_n=self.top_n,
        )
        event.tree = tree
        bookkeeping = time.perf_counter() - t2  # the step's target side, as theory.py's v(K) counts it
        self.schedule.update(len(draft_ids), min(verdict.num_accepted + 1, len(draft_ids)), verdict.num_accepted,
                             t1 - t0, t2 - t1 + bookkeeping)
        event.other_time_s = time.perf_counter() - t2
        return event

    def _tree_draft_and_score(self, seq: list[int], k: int, target):
        """A tree step (tree.py) up to the chain it shows: draft a tree of depth k, score it in one target
        forward, walk it (greedy: the target's choices; sampling: verify_tree_sampled), keep the path's cache
        rows. Returns the shown draft ids, their q rows [n, V], the target's logits rows [n + 1, V] for them
        (as a chain step would have), the tree's nodes (events.TreeNode), the time drafting ended and, when
        sampling, the Verdict of the shown chain with its warped p rows [n + 1, V] (greedy: None,
        verify_greedy decides it again)."""
        tree = self.drafter.propose_tree(seq, k, self.context)
        drafted_at = time.perf_counter()
        if not tree.ids:
            return [], None, target.forward([seq[-1]]), [], drafted_at, None
        logits = target.forward_tree(seq[-1], tree.ids, tree.parents)  # [N + 1, V]
        if self.sampling:
            p = probabilities(logits, self.warpers)  # [N + 1, V]
            path, tried, verdict = verify_tree_sampled(tree.ids, tree.parents, p, tree.q_rows, self.generator)
        else:
            path = greedy_path(tree.ids, tree.parents, logits.argmax(dim=-1).tolist())
            tried = [i for i, parent in enumerate(tree.parents) if parent < 0 or parent in path]
        target.keep(len(seq) - 1, [0] + [1 + node for node in path])
        shown = shown_nodes(tree.parents, path)
        rows = torch.tensor([0] + [1 + node for node in shown], device=logits.device)
        nodes = [TreeNode(token, self.target.token_text(token), parent, i in path, i in tried)
                 for i, (token, parent) in enumerate(zip(tree.ids, tree.parents))]
        decided = (verdict, p[rows]) if self.sampling else None
        return [tree.ids[i] for i in shown], tree.q_rows(shown), logits[rows], nodes, drafted_at, decided

    def _verify(self, draft_ids: list[int], logits: torch.Tensor, q,
                decided: Optional[tuple[Verdict, torch.Tensor]] = None) -> tuple[Verdict, torch.Tensor, torch.Tensor]:
        """Returns the verdict and the p, q rows to trace (greedy: softmax of the raw logits); `decided`: the
        verdict and warped p rows a sampled tree step has reached already."""
        if not draft_ids:  # a plain target step
            q = logits.new_zeros((0, logits.shape[-1]))
        else:
            q = q[: len(draft_ids)]  # [k, V] probabilities
        if not self.sampling:
            return verify_greedy(draft_ids, logits), torch.softmax(logits, dim=-1), q
        if decided is not None:
            return decided[0], decided[1], q
        p = probabilities(logits, self.warpers)
        ids = torch.tensor(draft_ids, dtype=torch.long, device=logits.device)
        return self.verify_sampled(ids, p, q, self.generator), p, q


def record_decision(event: StepEvent, decision) -> None:
    """The auto schedule's decision for this step (schedules.Decision) as the event's plain fields."""
    if decision is not None:
        event.decision, event.decision_why, event.predicted_speedup = decision.kind, decision.why, decision.predicted


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


def generate(target, draft, prompt_ids: list[int], settings: DecodeSettings = DecodeSettings(), **kwargs) -> RunResult:
    return Generation(target, draft, prompt_ids, settings, **kwargs).result()


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
