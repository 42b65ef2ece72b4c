"""The drafter interface: anything that proposes tokens for the target to verify.

Vocabulary, fixed here and used everywhere (engine, events, UI, docs):
  drafted   the tokens a drafter proposed in one step (up to K; 0 means a plain target step)
  q         the drafter's proposal distribution for each drafted token, over the target's vocabulary;
            a deterministic proposer (prompt lookup, re-tokenised text) has a one-hot q
  accepted  drafted tokens the verifier kept (verify.py holds the rule)

Protocol of one generation, driven by decoding.Generation, with seq = prompt + emitted tokens:
  start(prompt_ids, max_length)  once, before the first step
  observe(hidden)                only when reads_target_hidden: the target's final-norm hidden states of
                                 newly confirmed positions, in order, so that after each call the drafter
                                 has seen positions 0 .. len(seq) - 2 (hidden[i] predicts token i + 1);
                                 a drafter with target_layers gets those layers' outputs instead,
                                 concatenated per position (hidden_request, backend.py)
  propose(seq, k, context)       up to k tokens continuing seq, with their q rows
  rollback(keep)                 forget any own state for positions >= keep (keep = len(seq) - 1 after a step)
  finish(seq)                    once, when the run ends (finished, stopped or failed): seq = prompt + every
                                 emitted token (a drafter that learns across requests records it)
Before any of these, the loader (registry.load_drafter) calls warm_up() once: the one-time work a first
proposal would do (packing weights, torch's first-call set-up, first allocations) is done at load, not in step 0
of a user's run; it leaves what the drafter proposes unchanged.

A drafter family is a plug-in: one file holding its Drafter subclass, which is its own spec (the class
attributes `family` and `description`, `specs()` for the named drafters it ships, each a DrafterSpec with
How it works' title, summary and diagram and a `build`, and `cost_shape()` for the cost model), and one line
in registry.FAMILIES. docs/drafters.md shows it with an existing family.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Optional

from specdec.engine.proposals import Proposal, ProposalContext, hidden_request  # noqa: F401 (the interface's names)
from specdec.engine.tree import TreeShape

import torch


def always() -> bool:
    return True


@dataclass(frozen=True)
class DrafterSpec:
    """One named drafter a family ships: everything the CLI, the app, How it works and the cost model know of it."""

    name: str  # the same in --draft, the app's draft lists, presets and exports
    drafter: type  # its family: the Drafter subclass that builds it (registry.FAMILIES)
    description: str  # one line: what it reads from the target, what it costs
    build: Callable  # (target: LoadedModel, load_model: Callable) -> Drafter
    targets: tuple[str, ...] = ()  # target names it was made for; empty: any target
    title: str = ""  # How it works' heading for it ("EAGLE-2 tree"); empty: the family
    summary: str = ""  # How it works' sentence on what it reads and proposes (the description is a line of it)
    diagram: str = ""  # How it works' one-line text diagram of what it reads and proposes
    note: str = ""  # How it works' closing words where no model card measured it: what it costs, where it pays
    tree: Optional[TreeShape] = None  # a tree draft's shape (EAGLE-2); None: it drafts chains
    available: Callable[[], bool] = always  # False: its weights are not on this machine (not listed)
    weights: str = ""  # its folder of shipped weights (shipped.drafter_dir), where it has one

    @property
    def family(self) -> str:
        return self.drafter.family


@dataclass(frozen=True)
class CostShape:
    """What a drafter runs per drafted token, relative to its target's shape, for the roofline cost model
    (measure/cost_model.py): `layers` decoder layers of the target's width (MLP width `intermediate` where it
    differs), then `head_rows` rows of the head, plus `extra_params` weights read once per call. No network
    (network=False): a search through the token ids, costing nothing the model prices."""

    layers: int = 0
    head_rows: Optional[int] = None  # None: the target's whole head
    extra_params: int = 0
    intermediate: Optional[int] = None  # None: the target's MLP width
    one_call: bool = False  # all K tokens from one call (Medusa's heads); otherwise one call per drafted token
    network: bool = True


class NoCostModel(ValueError):
    """The cost model cannot price this drafter; the message says why and what to choose instead."""


@dataclass(frozen=True)
class LearnedState:
    """What a drafter that learns across requests had learnt when a run started, as that run could see it: how many
    earlier requests and tokens, a fingerprint of their content (a measurement of the run is shared only with runs
    that started from the same state), and the drafter's own copy of it (`content`, opaque here)."""

    requests: int
    tokens: int
    fingerprint: str
    content: object = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        return {"earlier_requests": self.requests, "earlier_tokens": self.tokens, "fingerprint": self.fingerprint}


class Drafter:
    """Base class with the bookkeeping every drafter shares; subclasses override what they need."""

    name: str = "drafter"
    family: ClassVar[str] = "other"  # the family's name, one per registered class (registry.FAMILIES)
    follows_text: ClassVar[bool] = False  # scores its request's own ids beyond a draft vocabulary (draft_vocab.HeadRows)
    learns_across_requests: ClassVar[bool] = False  # drafts from earlier requests' outputs (its owner's: suffix.py)
    description: str = ""  # one line: what it reads from the target, what it costs
    reads_target_hidden: bool = False
    target_layers: tuple[int, ...] = ()  # reads_target_hidden: the layers whose outputs it reads; (): final norm
    greedy_only: bool = False  # True where sampling would not be exact (the engine refuses it)
    tree_shape = None  # a tree.TreeShape: steps call propose_tree(seq, depth, context) -> tree.TreeProposal

    def __init__(self, vocab_limit: int):
        self.vocab_limit = vocab_limit  # q rows span ids 0 .. vocab_limit - 1, as the target's p rows
        self.runner = None  # a drafter that drafts through a model runner sets it; counters come from it
        self.own_forward_calls = 0  # otherwise a drafter counts its network forwards here
        self.own_forward_time_s = 0.0  # and the time inside them
        self.warm_ups = 0  # rehearsals done by warm_up (rehearse): 1 once loaded, for a drafter with a network

    @property
    def forward_calls(self) -> int:
        """Drafting forwards through a network (0 for lookups)."""
        return self.runner.forward_calls if self.runner is not None else self.own_forward_calls

    @property
    def forward_time_s(self) -> float:
        """Time inside those forwards."""
        return self.runner.forward_time_s if self.runner is not None else self.own_forward_time_s

    def start(self, prompt_ids: list[int], max_length: int) -> None:
        pass

    def observe(self, hidden: torch.Tensor) -> None:  # hidden: [m, d]
        pass

    def propose(self, seq: list[int], k: int, context: ProposalContext) -> Proposal:
        raise NotImplementedError

    def rollback(self, keep: int) -> None:
        pass

    def finish(self, seq: list[int]) -> None:
        pass

    def snapshot(self) -> Optional[LearnedState]:
        """What this drafter has learnt across requests, as a request starting now would see it; None for a drafter
        that learns nothing across requests (every drafter but suffix decoding)."""
        return None

    def replaying(self, state: Optional[LearnedState]) -> "Drafter":
        """A drafter that drafts as this one did from `state` (its snapshot) and keeps what it learns to itself: a
        measurement makes one per timed run, so that every repeat starts where the run it measures started and
        none drafts from an earlier repeat's output. A drafter that learns nothing across requests is itself."""
        return self

    def warm_up(self) -> None:
        """Called once by the loader, before any run: do here the one-time work this drafter's first proposal
        would otherwise do inside a user's run. Default: nothing to do (the lookups); a drafter with a network
        rehearses one throwaway proposal (rehearse). Must not change what the drafter proposes."""

    @classmethod
    def specs(cls) -> list[DrafterSpec]:
        """The named drafters this family ships (listed by the registry); none: it is built from a model name."""
        return []

    @classmethod
    def cost_shape(cls, spec: DrafterSpec, meta: dict, hidden: int) -> CostShape:
        """What `spec` runs per drafted token (its shipped zoo.json is `meta`; `hidden`: the target's width d),
        for the cost model."""
        raise NoCostModel(f"No cost model for {cls.family} drafters ({spec.name}).")

    def param_bytes(self) -> int:
        """Parameter bytes this drafter adds on top of the target (shared tensors not counted)."""
        return 0

    def state_bytes(self) -> int:
        """Bytes of per-sequence state (KV caches, features) currently allocated."""
        return self.runner.kv_bytes() if self.runner is not None else 0


WARM_UP_IDS = (1, 2, 3, 4)  # rehearse's throwaway request: ids every vocabulary here has
GREEDY = ProposalContext(sampling=False, warpers=None, generator=None)


def rehearse(drafter: Drafter, hidden_width: int = 0) -> None:
    """warm_up for a drafter with a network: one throwaway request through its own code path (start; observe
    zero states of hidden_width per position where it reads the target's; a greedy proposal of two tokens, a
    tree where it drafts trees), so that its weights' packed copies, torch's first-call set-up and its buffers'
    first allocations happen now. Its runner and counters are put back as they were; the next start() replaces
    the rest of its state, so later proposals are those of a drafter that never rehearsed."""
    runner, calls, time_s = drafter.runner, drafter.own_forward_calls, drafter.own_forward_time_s
    seq = list(WARM_UP_IDS)
    with torch.inference_mode():
        drafter.start(seq, 4 * len(seq))
        if drafter.reads_target_hidden:
            drafter.observe(torch.zeros(len(seq) - 1, hidden_width))
        if drafter.tree_shape is not None:
            drafter.propose_tree(seq, 2, GREEDY)
        else:
            drafter.propose(seq, 2, GREEDY)
    drafter.runner, drafter.own_forward_calls, drafter.own_forward_time_s = runner, calls, time_s
    drafter.warm_ups += 1


def one_hot_rows(ids: list[int], vocab_limit: int, device) -> torch.Tensor:
    """[len(ids), V] one-hot q rows of a deterministic proposer."""
    rows = torch.zeros(len(ids), vocab_limit, device=device)
    if ids:
        rows[torch.arange(len(ids), device=device), torch.tensor(ids, device=device)] = 1.0
    return rows
