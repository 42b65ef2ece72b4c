"""`auto`: plan a run before it starts: the drafter (and K, or tree) the measured cost model predicts fastest for
this target and prompt, and the auto K schedule's prior.

AutoPlanner.plan(prompt_ids, settings) reads the prompt's kind (choice.prompt_kind), alpha per candidate from
its model card, c and v(K) from this machine's cached probe (costs.py, measured on first use), then
choice.choose. The run (run.start) drafts with the chosen drafter under the auto K schedule
(schedules.AutoSchedule) with the choice's figures as its prior: K up to settings.k, speculation switched off
while the run's own alpha says it does not pay, and back on.

Candidates: the named drafters for the target (registry.drafter_specs) that have a model card with held-out
figures (the shipped drafters); the re-tokenised draft (greedy only, no card) and prompt lookup (whose
acceptance depends on how much the output copies the prompt; no card) are not candidates. A target without
candidates runs target-only, saying why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from specdec.drafters.base import Drafter, DrafterSpec
from specdec.drafters.shipped import drafter_dir
from specdec.engine.schedules import CostPrior
from specdec.planning.choice import (
    AUTO,
    AUTO_DESCRIPTION,
    AutoChoice,
    card_alpha,
    card_mode,
    choose,
    pool_target_side,
    prompt_kind,
    read_card,
)


def candidate_cards(candidates: list[DrafterSpec]) -> dict[str, dict]:
    """{drafter name: model card} for the candidate drafters that have a card (the shipped drafters' folders)."""
    cards = {}
    for spec in candidates:
        card = read_card(drafter_dir(spec.name))
        if card and card.get("figures"):
            cards[spec.name] = card
    return cards


@dataclass
class AutoPlan:
    """What AutoPlanner.plan decided for one run."""

    choice: AutoChoice
    drafter: Optional[Drafter]  # None: the target alone (no candidate predicted to pay)
    prior: Optional[CostPrior]  # the auto schedule's prior (None with no drafter)


class AutoPlanner:
    """Chooses, per run, among the candidate drafters it was given; loads the one it chooses (once)."""

    name = AUTO
    description = AUTO_DESCRIPTION

    def __init__(self, target, candidates: list[DrafterSpec], load: Callable[[str], Drafter],
                 say: Callable[[str], None] = lambda m: None):
        """candidates: the named drafters it may choose (those with a model card count); load(name): one of
        them, ready to draft for target (run.load_drafter passes registry.load_drafter)."""
        self.target, self.load, self.say = target, load, say
        self.cards = candidate_cards(candidates)
        self.loaded: dict[str, Drafter] = {}
        self.costs_by_k: dict[int, dict] = {}  # k_max -> costs(): looked up once (its cache key walks the weights)

    def drafter(self, name: str) -> Drafter:
        if name not in self.loaded:
            self.loaded[name] = self.load(name)
        return self.loaded[name]

    def costs(self, k_max: int) -> dict:
        """Every candidate's measured c and v(K) on this machine (cached; the first use probes each), the chain
        candidates' v(K) pooled (choice.pool_target_side)."""
        from specdec.planning.costs import cached_costs, costs_for

        if k_max not in self.costs_by_k:
            out = {}
            for name in self.cards:
                out[name] = cached_costs(self.target, name, k_max) or costs_for(self.target, self.drafter(name), k_max,
                                                                                say=self.say)
            self.costs_by_k[k_max] = pool_target_side(out)
        return self.costs_by_k[k_max]

    def alphas(self, kind: str, mode: str) -> dict:
        return {name: card_alpha(card, kind, mode) for name, card in self.cards.items()}

    def plan(self, prompt_ids: list[int], settings) -> AutoPlan:
        kind = prompt_kind(self.target.decode(list(prompt_ids)) if self.target.tokenizer is not None else "")
        mode = card_mode(settings.mode == "sampling")
        every = self.costs(settings.k)
        choice = choose(every, self.alphas(kind, mode), settings.k, kind, mode)
        if choice.best is None:
            return AutoPlan(choice, None, None)
        costs = every[choice.drafter]
        return AutoPlan(choice, self.drafter(choice.drafter), CostPrior(choice.best.alpha, dict(costs.c),
                                                                        dict(costs.v), tree=costs.tree))
