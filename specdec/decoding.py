"""Speculative decoding (and the target-only baseline) as a stream of StepEvents.

Invariants between steps, with seq = prompt + emitted tokens:
  - the target's cache holds seq[:-1]; seq[-1] is fed with the next step's drafts;
  - the draft's cache holds a prefix of seq; each step first feeds the tokens it lacks
    (one after a rejection, two after an all-accepted step: d_K and the bonus token).
"""
from __future__ import annotations

import time
from typing import Iterator, Optional

import torch

from .events import DecodeSettings, RunResult, StepEvent
from .errors import InvalidSettingsError
from .loading import LoadedModel, check_compatible, shared_vocab_size
from .metrics import measure_memory, summarize
from .sampling import build_warpers, probabilities, sample, validate
from .trace import build_event, final_token, top_tokens
from .verify import SampledVerifier, Verdict, verify_greedy, verify_sampled


class Generation:
    """Iterate for StepEvents as they happen; result() for text, ids, events and metrics.

    draft=None runs the target-only baseline through the same model-call code and warping.
    """

    def __init__(
        self,
        target: LoadedModel,
        draft: Optional[LoadedModel],
        prompt_ids: list[int],
        settings: DecodeSettings = DecodeSettings(),
        *,
        generator: Optional[torch.Generator] = None,
        sampled_verifier: SampledVerifier = verify_sampled,
        top_n: int = 5,
    ):
        validate(settings)
        if draft is not None:
            check_compatible(target, draft)
        self.target, self.draft, self.settings = target, draft, settings
        self.vocab_limit = shared_vocab_size(target, draft)
        self.prompt_ids = _checked_prompt(prompt_ids, self.vocab_limit)
        self.sampling = settings.mode == "sampling"
        self.warpers = build_warpers(settings)
        self.generator = generator or _seeded_generator(settings.seed, target.device)
        self.verify_sampled = sampled_verifier
        self.top_n = top_n
        self.eos_ids = target.eos_token_ids
        self.events: list[StepEvent] = []
        self.token_ids: list[int] = []
        self.engine_time_s = 0.0  # excludes time the consumer spends between events
        self._runners: tuple = ()
        self._steps = self._run()
        self._done = False

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
        target_runner, draft_runner = self._runners or (None, None)
        memory = measure_memory(self.target, self.draft, target_runner, draft_runner)
        metrics = summarize(self.events, self.engine_time_s, target_runner, draft_runner, memory)
        return RunResult(
            prompt_ids=list(self.prompt_ids),
            token_ids=list(self.token_ids),
            text=self.target.decode(self.token_ids),
            events=self.events,
            metrics=metrics,
            settings=self.settings,
            target_name=self.target.name,
            draft_name=self.draft.name if self.draft is not None else None,
        )

    # -- the loop ---------------------------------------------------------------------------

    def _run(self) -> Iterator[StepEvent]:
        started = time.perf_counter()
        seq = list(self.prompt_ids)
        max_length = len(seq) + self.settings.max_new_tokens + self.settings.k + 1
        target = self.target.new_runner(self.vocab_limit, max_length)
        draft = self.draft.new_runner(self.vocab_limit, max_length) if self.draft is not None else None
        self._runners = (target, draft)
        prefill(target, draft, seq)
        while True:
            remaining = self.settings.max_new_tokens - len(self.token_ids)
            k = min(self.settings.k, remaining - 1) if draft is not None else 0  # never overshoot
            event = self._step(len(self.events), k, seq, target, draft, remaining)
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
    def _step(self, index: int, k: int, seq: list[int], target, draft, remaining: int) -> StepEvent:
        t0 = time.perf_counter()
        draft_ids, q = propose(draft, seq, k, self.sampling, self.warpers, self.generator) if k else ([], None)
        t1 = time.perf_counter()
        logits = target.forward([seq[-1]] + draft_ids)  # [k+1, V]
        verdict, p, q = self._verify(draft_ids, logits, q)
        t2 = time.perf_counter()
        emitted, stop_reason = cut_at_stop(
            draft_ids[: verdict.num_accepted] + [verdict.next_token], self.eos_ids, remaining
        )
        if stop_reason is None:
            rollback(target, draft, len(seq), verdict.num_accepted)
        top_p = top_tokens(self.target, p, self.top_n)  # one top-n per target row, drafts and final alike
        final = None
        if len(emitted) > verdict.num_accepted:
            kind = "target" if draft is None else verdict.next_kind
            final = final_token(self.target, verdict, p, top_p[verdict.num_accepted], kind, self.sampling, self.top_n)
        event = build_event(
            model=self.target, index=index, sampling=self.sampling, draft_ids=draft_ids, p=p, q=q,
            verdict=verdict, top_p=top_p, final=final, emitted=emitted, times=(t1 - t0, t2 - t1, 0.0),
            stop_reason=stop_reason, top_n=self.top_n,
        )
        event.other_time_s = time.perf_counter() - t2
        return event

    def _verify(self, draft_ids: list[int], logits: torch.Tensor, q) -> tuple[Verdict, torch.Tensor, torch.Tensor]:
        """Returns the verdict and the p, q rows to trace (greedy: softmax of the raw logits)."""
        if q is None:  # no draft this step
            q = logits.new_zeros((0, logits.shape[-1]))
        if not self.sampling:
            return verify_greedy(draft_ids, logits), torch.softmax(logits, dim=-1), torch.softmax(q, dim=-1)
        ids = torch.tensor(draft_ids, dtype=torch.long, device=logits.device)
        p = probabilities(logits, self.warpers)
        return self.verify_sampled(ids, p, q, self.generator), p, q


def prefill(target, draft, seq: list[int]) -> None:
    target.prefill(seq[:-1])
    if draft is not None:
        draft.prefill(seq[:-1])


def propose(draft, seq: list[int], k: int, sampling: bool, warpers, generator) -> tuple[list[int], torch.Tensor]:
    """Draft k tokens autoregressively. Returns the ids and per-position rows [k, V]:
    warped probabilities q when sampling, raw logits when greedy."""
    logits = draft.forward(seq[draft.length :])[-1:]  # feed what the draft has not seen yet
    ids, rows = [], []
    for i in range(k):
        if i:
            logits = draft.forward([ids[-1]])
        if sampling:
            q = probabilities(logits, warpers)
            rows.append(q)
            ids.append(sample(q[0], generator))
        else:
            rows.append(logits)
            ids.append(int(logits[0].argmax()))
    return ids, torch.cat(rows)


def rollback(target, draft, seq_len: int, num_accepted: int) -> None:
    """Keep what the next step needs: target holds seq_new[:-1], the draft at most that much."""
    keep = seq_len + num_accepted
    target.rollback(keep)
    if draft is not None:
        draft.rollback(min(draft.length, keep))


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
