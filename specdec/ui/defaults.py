"""The app's default draft: a named drafter at a constant K of at least MIN_K (so a first visitor sees several drafted
tokens a step), the one predicted fastest on chat on the machine that runs the app.

Once the default target is loaded (the preload), measure_here takes what `auto` measures on this machine, each
candidate drafter's c and v(K) (planning/costs.py: cached in the machine's records, probed once where missing),
with its model card's acceptance on chat, and picks the (drafter, K >= MIN_K) with the best predicted speedup. Until
then, and where nothing can be measured, the default is the model cards' best measured chat speedup at K >= MIN_K
(assets/drafters/<name>/card.json, `best_k_greedy_chat`, measured on the CPU kind the cards were made on). The Draft
hint says which of the two the figure comes from; the K slider shows the K that runs."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from specdec.models import presets
from specdec.paths import SHIPPED_DRAFTERS_DIR
from specdec.ui.choices import draft_choices

log = logging.getLogger("specdec.ui.launch")
MIN_K = 3  # the default drafts at least this many tokens a step: speculation visible on the first screen
FALLBACK_K = 4  # when no card is readable: the shipped default drafter at the textbook K


@dataclass(frozen=True)
class DefaultDraft:
    name: str
    k: int
    speedup: Optional[float]  # the figure behind the choice (None: none read)
    source: str = "cards"  # "cards": the model cards' measured chat speedup; "here": predicted from this machine

    def why(self) -> str:
        """One line for the Draft control's info: the choice and where its figure comes from."""
        if self.speedup is None:
            return f"default: {self.name} at K = {self.k}"
        if self.source == "here":
            return (f"default: predicted fastest on chat on this machine ({self.speedup:.2f}× at K = {self.k}, from "
                    "its measured drafting and verification costs and the model card's acceptance)")
        return (f"default: the fastest on chat in the model cards at K ≥ {MIN_K} ({self.speedup:.2f}× at K = "
                f"{self.k}, measured on the cards' machine; this machine is measured once the models load)")


def best_from_cards(folder: Path, allowed: set[str], min_k: int = MIN_K) -> DefaultDraft | None:
    """The (drafter, K >= min_k) with the largest measured chat speedup among the cards under `folder`."""
    best = None
    for card_file in sorted(Path(folder).glob("*/card.json")):
        name = card_file.parent.name
        if name not in allowed:
            continue
        try:
            by_k = json.loads(card_file.read_text()).get("best_k_greedy_chat") or {}
        except (OSError, ValueError):
            continue
        for k, speedup in by_k.items():
            if isinstance(speedup, (int, float)) and str(k).isdigit() and int(k) >= min_k and \
                    (best is None or speedup > best.speedup):
                best = DefaultDraft(name, int(k), float(speedup))
    return best


_CARDS: list[DefaultDraft] = []
_HERE: list[DefaultDraft] = []  # measure_here's choice, once made (the process's)


def cards_default() -> DefaultDraft:
    if not _CARDS:
        _CARDS.append(best_from_cards(SHIPPED_DRAFTERS_DIR, set(draft_choices(presets.DEFAULT_TARGET)))
                      or DefaultDraft(presets.DEFAULT_DRAFT, FALLBACK_K, None))
    return _CARDS[0]


def default_draft() -> DefaultDraft:
    """The default pair's draft and K: measured on this machine once measure_here has run, else the cards'."""
    return _HERE[0] if _HERE else cards_default()


def measured_here() -> Optional[DefaultDraft]:
    return _HERE[0] if _HERE else None


def measure_here(target, load_drafter: Callable, say: Callable[[str], None] = lambda m: None
                 ) -> Optional[DefaultDraft]:
    """The (drafter, K >= MIN_K) predicted fastest on chat (greedy) for `target` on this machine, from `auto`'s
    measured costs (probed once per drafter where the machine's records lack them) and the model cards' acceptance;
    it becomes the default. None (the cards' stay) where no candidate has both."""
    from specdec.drafters import registry
    from specdec.planning.auto import candidate_cards
    from specdec.planning.choice import AUTO_K_MAX, card_alpha, pool_target_side, rank
    from specdec.planning.costs import cached_costs, costs_for

    cards = candidate_cards(registry.drafter_specs(target.name))
    costs = {}
    for name in cards:
        costs[name] = cached_costs(target, name, AUTO_K_MAX) or costs_for(
            target, load_drafter(name), AUTO_K_MAX, say=say)
    alphas = {name: card_alpha(card, "chat", "greedy") for name, card in cards.items()}
    best = next((c for c in rank(pool_target_side(costs), alphas, AUTO_K_MAX) if c.k >= MIN_K), None)
    if best is None:
        return None
    _HERE[:] = [DefaultDraft(best.drafter, best.k, best.predicted, "here")]
    log.info("default draft measured here: %s", best.describe())
    return _HERE[0]
