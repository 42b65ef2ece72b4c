"""`auto`: the drafter (and K, or tree) the measured cost model predicts fastest for this target and prompt.

It drafts nothing itself. decoding.Generation calls plan(prompt_ids, settings) before the run: the prompt's
kind (auto_choice.prompt_kind), alpha per candidate from its model card, c and v(K) from this machine's
cached probe (auto_costs.py, measured on first use), then auto_choice.choose. Generation runs the chosen
drafter under the auto K schedule (schedules.AutoSchedule) with the choice's figures as its prior: K up to
settings.k, speculation switched off while the run's own alpha says it does not pay, and back on.

Candidates: the built-in drafters for the target (registry.builtin_specs) that have a model card with
held-out figures (the SmolLM2 draft zoo); the re-tokenised draft (greedy only, no card) and prompt lookup
(whose acceptance depends on how much the output copies the prompt; no card) are not candidates. A target
without candidates runs target-only, saying why.
"""
from __future__ import annotations

from typing import Callable, Optional

from specdec.drafters.base import Drafter
from specdec.drafters.spec import DrafterSpec
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
    """{drafter name: model card} for the candidate drafters that have a card (the draft zoo's folders)."""
    from specdec.drafters.shipped_build import drafter_dir

    cards = {}
    for spec in candidates:
        card = read_card(drafter_dir(spec.name))
        if card and card.get("figures"):
            cards[spec.name] = card
    return cards


class AutoDrafter(Drafter):
    """A placeholder that plans; the run drafts with the drafter it chose (decoding.Generation)."""

    name = AUTO
    family = "auto"
    description = AUTO_DESCRIPTION

    def __init__(self, target, candidates: list[DrafterSpec], load: Callable[[str], Drafter],
                 say: Callable[[str], None] = lambda m: None):
        """candidates: the built-in drafters it may choose (those with a model card count); load(name): one of
        them, ready to draft for target (registry.build_auto passes registry.load_drafter)."""
        super().__init__(target.real_vocab_size)
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
        candidates' v(K) pooled (auto_choice.pool_target_side)."""
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

    def plan(self, prompt_ids: list[int], settings) -> tuple[AutoChoice, Optional[Drafter], Optional[CostPrior]]:
        """(the choice, the chosen drafter or None, the auto schedule's prior)."""
        kind = prompt_kind(self.target.decode(list(prompt_ids)) if self.target.tokenizer is not None else "")
        mode = card_mode(settings.mode == "sampling")
        every = self.costs(settings.k)
        choice = choose(every, self.alphas(kind, mode), settings.k, kind, mode)
        if choice.best is None:
            return choice, None, None
        costs = every[choice.drafter]
        prior = CostPrior(choice.best.alpha, dict(costs.c), dict(costs.v), tree=costs.tree)
        return choice, self.drafter(choice.drafter), prior

    def propose(self, seq, k, context):  # never reached: Generation drafts with the chosen drafter
        raise RuntimeError("the auto drafter plans; Generation drafts with the drafter it chose")
