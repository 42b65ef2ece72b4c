"""The first one or two tokens of a sampled speculative run, drawn many times, exactly and cheaply.

A run's first tokens depend only on the prompt: the target is prefilled once, the drafter proposes
for the prompt, the target scores [last prompt token, drafts], and the verifier decides.
FirstTokens builds that step once per prefix (the prompt; prompt + first token when a second token
is needed after a rejection) from a Generation's own pieces (its drafter, warpers, K schedule,
generator and verifier; decoding.prefill and decoding.cut_at_stop), then runs the verifier with
fresh random numbers for every draw. A drafter whose q rows are one-hot (prompt lookup) proposes
the same tokens every time, so it proposes once per prefix. Where a step drafts one token (one studied
token, or one left to study), its row q depends on the context alone and the drafted token is a draw from
it (the drafter protocol: d ~ q), so the row is computed once per prefix and each draw samples it afresh, by
its inverse CDF, the row's sums made once (a check makes tens of thousands of draws); a step drafting more
tokens proposes afresh every draw (each later row depends on the earlier draws).

What is not computed, because it cannot change the studied tokens: drafts after the n-th (a step
drafts at most as many tokens as are still studied) and the bonus row when the bonus position is
past them. The target's row after each context (prompt + some tokens) is computed once and shared:
by the exact law (TargetLaw), the target-alone draws and every verification step that needs it. In
exact arithmetic a row does not depend on how many tokens its forward carried; in floating point
it may in the last bits (the greedy check is where that shows).

Compact rows. A verification over the full vocabulary reads and sums every entry of its rows (49,152 for
SmolLM2), and the test needs tens of thousands. So the verifier gets each row over a merged
vocabulary: every token the test counts separately and every drafted token keep their own entry;
the others become two entries, the tokens where p >= q and those where p < q. That is exact for the
rule: acceptance reads p and q of the drafted token only, and inside each merged entry
max(0, p - q) sums to max(0, sum p - sum q), since p - q has one sign there. A merged entry is "some
rare token": the test pools those outcomes in one cell.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from specdec.drafters.base import Proposal, hidden_request
from specdec.engine.decoding import Generation, cut_at_stop, prefill
from specdec.engine.sampling import probabilities
from specdec.engine.verify import Verdict
from specdec.exactness.chi_square import MIN_EXPECTED

import torch

OTHER = ("other",)  # the test's pooled cell: every outcome not counted separately
MERGED_UP, MERGED_DOWN, PADDING = -1, -2, -3  # compact entries that stand for no single token


class SingleRow:
    """A one-token draft's row q [1, V] and what drawing from it by its inverse CDF needs."""

    def __init__(self, q: torch.Tensor):
        self.q = q
        self.cumulative = q[0].double().cumsum(0)  # [V] float64: the sums of q up to and including each id

    def draw(self, generator: torch.Generator) -> int:
        """One id d ~ q by the inverse CDF: the first whose sum exceeds a uniform share of the total. An id of
        probability 0 never is (its sum equals the one before it). One uniform and a binary search per draw, where
        torch.multinomial draws a random number for every id of the vocabulary."""
        total = self.cumulative[-1:]
        share = torch.rand(1, generator=generator, dtype=torch.float64, device=total.device) * total
        index = int(torch.searchsorted(self.cumulative, share, right=True))
        if index == self.cumulative.numel():  # the share rounded up to the total: the last id with a probability
            index = int(torch.searchsorted(self.cumulative, total))
        return index


class TargetLaw:
    """The warped target's law of the first `tokens` tokens (1 or 2), over the cells: the outcomes
    expected at least MIN_EXPECTED times in `draws` draws (an EOS ends an outcome early)."""

    def __init__(self, first: torch.Tensor, tokens: int, eos_ids: tuple[int, ...], draws: int):
        self.first, self.tokens, self.eos_ids = first, tokens, tuple(eos_ids)
        self.min_prob = MIN_EXPECTED / max(draws, 1)
        order = torch.argsort(first, descending=True)
        self.heads = [int(t) for t in order[: int((first >= self.min_prob).sum())]]  # first tokens of cells
        self.second: dict[int, torch.Tensor] = {}  # head -> the target's row after prompt + head

    def needs_second(self) -> list[int]:
        return [t for t in self.heads if t not in self.eos_ids] if self.tokens == 2 else []

    def counted_after(self, prefix: tuple) -> list[int]:
        """Tokens that, after `prefix`, continue towards a cell."""
        if not prefix:
            return self.heads
        row = self.second.get(prefix[0]) if len(prefix) == 1 else None
        if row is None:
            return []
        wanted = self.min_prob / float(self.first[prefix[0]])
        return [int(t) for t in (row >= wanted).nonzero().flatten()]

    def cells(self) -> dict[tuple, float]:
        if self.tokens == 1 or not self.second:
            return {(t,): float(self.first[t]) for t in self.heads}
        cells = {}
        for t in self.heads:
            if t in self.eos_ids or t not in self.second:
                cells[(t,)] = float(self.first[t])
                continue
            for u in self.counted_after((t,)):
                cells[(t, u)] = float(self.first[t] * self.second[t][u])
        return cells

    def key(self, outcome: tuple, cells: dict) -> Optional[tuple]:
        """The outcome's cell, OTHER, or None when it needs another token to be decided."""
        if outcome in cells:
            return outcome
        if len(outcome) < self.tokens and outcome and outcome[-1] in self.second:
            return None
        return OTHER

    def sample(self, n: int, generator, cells: dict) -> list[tuple[tuple, Optional[int]]]:
        """n draws from the target alone: (cell or OTHER, first token)."""
        firsts = torch.multinomial(self.first, n, replacement=True, generator=generator).tolist()
        out = []
        for t, count in Counter(firsts).items():
            if self.tokens == 1 or t not in self.second:
                out += [(self.key((t,), cells), t)] * count
                continue
            seconds = torch.multinomial(self.second[t], count, replacement=True, generator=generator).tolist()
            out += [(self.key((t, u), cells), t) for u in seconds]
        return out


@dataclass
class CompactStep:
    """One verification step over the compact rows; columns[i][j] is the token of entry j of row i."""

    drafts: list[int]
    draft: torch.Tensor  # [k] compact indices (each draft is entry 0 of its row)
    p: torch.Tensor  # [k+1, C]
    q: torch.Tensor  # [k, C]
    columns: list[list[int]] = field(default_factory=list)

    def emitted(self, verdict: Verdict) -> list[int]:
        """Accepted drafts, then the verifier's own token (a MERGED_* marker when it is a rare one)."""
        n = verdict.num_accepted
        return self.drafts[:n] + [self.columns[n][verdict.next_token]]


def compact_rows(p: torch.Tensor, q: torch.Tensor, kept: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor,
                                                                                    list[list[int]]]:
    """p [k+1, V], q [k, V] -> rows over kept[i] + the two merged entries (p >= q, p < q), padded to one width."""
    k, width = q.shape[0], max(len(ids) for ids in kept) + 2
    small_p, small_q, columns = p.new_zeros((k + 1, width)), p.new_zeros((k, width)), []
    for i, ids in enumerate(kept):
        index = torch.tensor(ids, dtype=torch.long, device=p.device)
        q_row = q[i] if i < k else torch.zeros_like(p[i])  # the bonus row has no draft: all of it is "p >= q"
        rest = torch.ones_like(p[i], dtype=torch.bool)
        rest[index] = False
        up = rest & (p[i] >= q_row)
        small_p[i] = merge_row(p[i], index, up, rest & ~up, width)
        if i < k:
            small_q[i] = merge_row(q[i], index, up, rest & ~up, width)
        columns.append(ids + [MERGED_UP, MERGED_DOWN] + [PADDING] * (width - len(ids) - 2))
    return small_p, small_q, columns


def merge_row(row: torch.Tensor, index: torch.Tensor, up: torch.Tensor, down: torch.Tensor, width: int) -> torch.Tensor:
    """[V] -> [width]: the kept entries, the mass of `up`, the mass of `down`, zeros."""
    merged = row.new_zeros(width)
    merged[: len(index)] = row[index]
    merged[len(index)], merged[len(index) + 1] = row[up].sum(), row[down].sum()
    return merged


class FirstTokens:
    """Draws of the first `tokens` tokens of `gen`'s run (a Generation not yet iterated; sampling)."""

    def __init__(self, gen: Generation, tokens: int):
        self.gen, self.seq = gen, list(gen.prompt_ids)
        self.max_new = gen.settings.max_new_tokens
        self.tokens = max(1, min(tokens, self.max_new))
        max_length = len(self.seq) + self.max_new + gen.settings.k + 1  # as the engine sizes its runs
        self.reads_hidden = gen.drafter is not None and gen.drafter.reads_target_hidden
        self.runner = gen.target.new_runner(gen.vocab_limit, max_length, keep_hidden=hidden_request(gen.drafter))
        prefill(self.runner, gen.drafter, self.seq, max_length)
        self.features = {0: self.runner.hidden[-1:] if self.reads_hidden and len(self.seq) > 1 else None}
        self.first_k = gen.schedule.next_k() if gen.drafter is not None else 0
        self.law: Optional[TargetLaw] = None
        self.cells: dict = {}
        self.cache: dict[tuple, torch.Tensor] = {}  # context after the prompt -> the target's warped row [V]
        self.fixed: dict[tuple, Proposal] = {}  # prefix -> the proposal, when the drafter's is the same every time
        self.single_rows: dict[tuple, SingleRow] = {}  # prefix -> a one-token draft's row, drawn from afresh
        self.steps: dict[tuple, CompactStep] = {}  # (prefix, drafts) -> its compact step

    # --- the target's rows -----------------------------------------------------------------------
    def rows(self, prefix: tuple, drafts: list[int]) -> torch.Tensor:
        """Warped target rows after prompt + prefix + drafts[:i], i = 0 .. len(drafts): [len(drafts) + 1, V].
        Each context's row is computed once (one forward gives the rows of all of its prefixes)."""
        contexts = [prefix + tuple(drafts[:i]) for i in range(len(drafts) + 1)]
        if any(c not in self.cache for c in contexts):
            longest = contexts[-1]
            self.runner.rollback(len(self.seq) - 1)
            probs = probabilities(self.runner.forward([self.seq[-1], *longest]), self.gen.warpers)
            if self.reads_hidden:
                self.features[1] = self.runner.hidden[:1]  # the last prompt token's feature, whatever follows
            for j, row in enumerate(probs):
                self.cache.setdefault(longest[:j], row)
        return torch.stack([self.cache[c] for c in contexts])

    def build_law(self, draws: int, should_stop=lambda: False):
        """Generator: (done, total) per target forward; returns the TargetLaw (None when stopped)."""
        self.law = TargetLaw(self.rows((), [])[0], self.tokens, self.gen.eos_ids, draws)
        needed = self.law.needs_second()
        for i, head in enumerate(needed):
            if should_stop():
                return None
            yield i, len(needed)
            self.law.second[head] = self.rows((head,), [])[0]
        self.cells = self.law.cells()
        return self.law

    # --- the speculative engine -----------------------------------------------------------------
    def draft_count(self, prefix: tuple) -> int:
        """K of this step as the engine plans it (every schedule plans K >= 1 after the first step),
        never past max_new_tokens, and at most the tokens still to study."""
        planned = self.first_k if not prefix else (1 if self.gen.drafter is not None else 0)
        return max(0, min(planned, self.max_new - len(prefix) - 1, self.tokens - len(prefix)))

    def rewind_drafter(self, prefix: tuple) -> None:
        """The drafter's state for seq = prompt + prefix, as after the engine's rollback: positions up to
        len(seq) - 2, with the feature of position len(seq) - 2 for a drafter that reads them."""
        keep = len(self.seq) + len(prefix) - 1
        self.gen.drafter.rollback(keep)
        feature = self.features.get(len(prefix))
        if self.reads_hidden and feature is not None:
            self.gen.drafter.observe(feature)

    def proposal(self, prefix: tuple) -> Proposal:
        if prefix in self.fixed:
            return self.fixed[prefix]
        k = self.draft_count(prefix)
        if k == 0:
            return self.fixed.setdefault(prefix, Proposal())
        if prefix in self.single_rows:  # one draft: its row q [1, V] depends on the context alone, and d ~ q
            row = self.single_rows[prefix]
            return Proposal([row.draw(self.gen.generator)], row.q)
        self.rewind_drafter(prefix)
        made = self.gen.drafter.propose(self.seq + list(prefix), k, self.gen.context)
        proposal = Proposal(made.ids[:k], made.q[:k] if made.ids else None)
        if not proposal.ids or bool((proposal.q.max(dim=-1).values == 1).all()):
            self.fixed[prefix] = proposal  # one-hot q: each drafted token is the only one it can be
        elif k == 1:
            self.single_rows[prefix] = SingleRow(proposal.q)
        return proposal

    def step(self, prefix: tuple) -> CompactStep:
        proposal = self.proposal(prefix)
        key = (prefix, tuple(proposal.ids))
        if key not in self.steps:
            self.steps[key] = self.compact_step(prefix, proposal)
        return self.steps[key]

    def compact_step(self, prefix: tuple, proposal: Proposal) -> CompactStep:
        k = len(proposal.ids)
        studied = min(k + 1, self.tokens - len(prefix))  # rows whose token is one of the studied ones
        p = self.rows(prefix, proposal.ids[: studied - 1])
        if studied < k + 1:  # a bonus row past the studied tokens is merged whole: its values never matter
            p = torch.cat([p, p.new_full((1, p.shape[-1]), 1.0 / p.shape[-1])])
        q = proposal.q if k else p.new_zeros((0, p.shape[-1]))
        kept = [list(dict.fromkeys(proposal.ids[i : i + 1] + self.counted(prefix, proposal.ids[:i])))
                for i in range(k + 1)]
        small_p, small_q, columns = compact_rows(p, q, kept)
        draft = torch.zeros(k, dtype=torch.long, device=p.device)
        return CompactStep(list(proposal.ids), draft, small_p, small_q, columns)

    def counted(self, prefix: tuple, accepted: list[int]) -> list[int]:
        before = prefix + tuple(accepted)
        return self.law.counted_after(before) if len(before) < self.tokens else []

    def draw(self) -> tuple[tuple, Optional[int]]:
        """One speculative run's first tokens: (cell or OTHER, first token when it is a known one)."""
        prefix: tuple = ()
        while True:
            step = self.step(prefix)
            verdict = self.gen.verify_sampled(step.draft, step.p, step.q, self.gen.generator)
            emitted, _ = cut_at_stop(step.emitted(verdict), self.gen.eos_ids, self.max_new - len(prefix))
            outcome = (prefix + tuple(emitted))[: self.tokens]
            if any(t < 0 for t in outcome):
                return OTHER, outcome[0] if outcome[0] >= 0 else None
            key = self.law.key(outcome, self.cells)
            if key is not None:
                return key, outcome[0]
            prefix = outcome

    def first_draft(self) -> Optional[list[int]]:
        """The first step's drafted tokens when they are the same on every draw (else None)."""
        proposal = self.fixed.get(())
        return None if proposal is None else list(proposal.ids)
