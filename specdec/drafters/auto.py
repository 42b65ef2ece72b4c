"""`auto`: the drafter (and K, or tree) the measured cost model predicts fastest for this target and prompt.

It drafts nothing itself. decoding.Generation calls plan(prompt_ids, settings) before the run: the prompt's
kind (auto_choice.prompt_kind), alpha per candidate from its model card, c and v(K) from this machine's
cached probe (auto_costs.py, measured on first use), then auto_choice.choose. Generation runs the chosen
drafter under the auto K schedule (schedules.AutoSchedule) with the choice's figures as its prior: K up to
settings.k, speculation switched off while the run's own alpha says it does not pay, and back on.

Candidates: the registered drafters for the target (drafters/registry.py) that have a model card with
held-out figures (the SmolLM2 draft zoo); the re-tokenised draft (greedy only, no card) and prompt lookup
(whose acceptance depends on how much the output copies the prompt; no card) are not candidates. A target
without candidates runs target-only, saying why.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..auto_choice import (AUTO, AutoChoice, card_alpha, card_mode, choose, pool_target_side, prompt_kind,
                           read_card)
from ..schedules import CostPrior
from .base import Drafter
from .registry import DrafterSpec, drafter_specs, register


def card_folder(name: str):
    """The folder of a drafter's model card (the draft zoo's), or None."""
    try:
        from ..zoo.build import drafter_dir
    except ImportError:
        return None
    return drafter_dir(name)


def candidate_cards(target_name: str) -> dict[str, dict]:
    """{drafter name: model card} for the registered drafters of this target that have a card."""
    cards = {}
    for spec in drafter_specs(target_name):
        folder = card_folder(spec.name) if spec.name != AUTO else None
        card = read_card(folder) if folder is not None else None
        if card and card.get("figures"):
            cards[spec.name] = card
    return cards


class AutoDrafter(Drafter):
    """A placeholder that plans; the run drafts with the drafter it chose (decoding.Generation)."""

    name = AUTO
    family = "auto"
    description = "chooses the drafter and K with the best predicted speedup on this machine; speculation off when it does not pay"

    def __init__(self, target, load_model: Optional[Callable] = None, say: Callable[[str], None] = lambda m: None):
        super().__init__(target.real_vocab_size)
        self.target, self.load_model, self.say = target, load_model, say
        self.cards = candidate_cards(target.name)
        self.loaded: dict[str, Drafter] = {}

    def drafter(self, name: str) -> Drafter:
        from .registry import load_drafter

        if name not in self.loaded:
            self.loaded[name] = load_drafter(name, self.target, load_model=self.load_model)
        return self.loaded[name]

    def costs(self, k_max: int) -> dict:
        """Every candidate's measured c and v(K) on this machine (cached; the first use probes each), the chain
        candidates' v(K) pooled (auto_choice.pool_target_side)."""
        from ..auto_costs import cached_costs, costs_for

        out = {}
        for name in self.cards:
            out[name] = cached_costs(self.target, name, k_max) or costs_for(self.target, self.drafter(name), k_max,
                                                                            say=self.say)
        return pool_target_side(out)

    def alphas(self, kind: str, mode: str) -> dict:
        return {name: card_alpha(card, kind, mode) for name, card in self.cards.items()}

    def plan(self, prompt_ids: list[int], settings) -> tuple[AutoChoice, Optional[Drafter], Optional[CostPrior]]:
        """(the choice, the chosen drafter or None, the auto schedule's prior)."""
        kind = prompt_kind(self.target.decode(list(prompt_ids)) if self.target.tokenizer is not None else "")
        mode = card_mode(settings.mode == "sampling")
        choice = choose(self.costs(settings.k), self.alphas(kind, mode), settings.k, kind, mode)
        if choice.best is None:
            return choice, None, None
        costs = self.costs(settings.k)[choice.drafter]
        prior = CostPrior(choice.best.alpha, dict(costs.c), dict(costs.v), tree=costs.tree)
        return choice, self.drafter(choice.drafter), prior

    def propose(self, seq, k, context):  # never reached: Generation drafts with the chosen drafter
        raise RuntimeError("the auto drafter plans; Generation drafts with the drafter it chose")


register(DrafterSpec(name=AUTO, family="auto", description=AutoDrafter.description,
                     build=lambda target, load_model=None: AutoDrafter(target, load_model)))
