"""The app's default draft: a named drafter at a constant K, the pair whose model card measured the best
speedup on chat prompts (greedy, at a fixed K) on the CPU kind the cards were measured on. Computed from the
shipped cards (assets/drafters/<name>/card.json, `best_k_greedy_chat`: K -> measured speedup) when the app
starts, so a retrained zoo changes the default without a code change; the K slider then shows what ran."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from specdec.models import presets
from specdec.paths import SHIPPED_DRAFTERS_DIR
from specdec.ui.choices import draft_choices

FALLBACK_K = 4  # when no card is readable: the shipped default drafter at the textbook K


@dataclass(frozen=True)
class DefaultDraft:
    name: str
    k: int
    speedup: float | None  # the card's measured speedup on chat at that K (None: no card read)

    def why(self) -> str:
        """One line for the Draft control's info."""
        if self.speedup is None:
            return f"default: {self.name} at K = {self.k}"
        return f"default: the fastest on chat in the model cards ({self.speedup:.2f}× at K = {self.k})"


def best_from_cards(folder: Path, allowed: set[str]) -> DefaultDraft | None:
    """The (drafter, K) with the largest measured chat speedup among the cards under `folder`."""
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
            if isinstance(speedup, (int, float)) and str(k).isdigit() and (best is None or speedup > best.speedup):
                best = DefaultDraft(name, int(k), float(speedup))
    return best


@lru_cache(maxsize=1)
def default_draft() -> DefaultDraft:
    """The default pair's draft and K (read once per process)."""
    return (best_from_cards(SHIPPED_DRAFTERS_DIR, set(draft_choices(presets.DEFAULT_TARGET)))
            or DefaultDraft(presets.DEFAULT_DRAFT, FALLBACK_K, None))
