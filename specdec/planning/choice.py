"""The `auto` plan's choice: which drafter and K (or tree) the measured cost model predicts fastest.

Measured, not guessed:
  alpha    per drafter, prompt kind and mode, from its model card (assets/drafters/<name>/card.json: held-out
           prompts at K = CARD_K, greedy and T = 0.7): the card's tokens per target forward E inverted through
           E = (1 - alpha^(K+1)) / (1 - alpha) (greedy acceptance does not depend on the machine; a tree's
           figure is the alpha of its accepted path, so E(alpha, depth) is its tokens per step)
  c, v(K)  per drafter on this machine: a short probe of real engine steps (costs.py), cached; the chain
           drafters' v(K), the same target-side work for each, pooled (pool_target_side)
The prompt kind ("chat", "code" or "rewrite", the cards' kinds) is read from the prompt's text (prompt_kind).

The choice (choose): for every candidate and K, theory.theoretical_speedup(alpha, K, c(K), v(K)) =
E / (K c + v(K)); the best (drafter, K) wins. When no candidate predicts more than 1, the best one is still
loaded but the run starts with speculation off (the auto schedule, schedules.py, switches it on when the
run's own alpha says it pays). Pure functions here; measuring and loading live in costs.py and auto.py.
"""
from __future__ import annotations

import json
import re
import statistics
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional

from specdec.engine.theory import expected_tokens_per_forward, theoretical_speedup

AUTO = "auto"  # the name everywhere: --draft auto, --k auto, the app's draft list, exports
AUTO_K_MAX = 8  # --k auto: the largest K the auto schedule may draft
AUTO_DESCRIPTION = ("chooses the drafter and K with the best predicted speedup on this machine; speculation off when "
                    "it does not pay")
CARD_K = 4  # the K (tree depth) of the model cards' figures (zoo/evaluate.py)


def k_and_schedule(k: int | str, schedule: str = "constant") -> tuple[int, str]:
    """--k as a run takes it: (K, K schedule); auto is the auto schedule drafting up to AUTO_K_MAX."""
    return (AUTO_K_MAX, AUTO) if k == AUTO else (k, schedule)


KINDS = ("chat", "code", "rewrite")
CODE_MARKS = re.compile(r"```|\bdef \w+\(|\bpython\b|\bfunction\b|\bcode\b|\bclass \w+|\bimport \w+", re.IGNORECASE)
REWRITE_MARKS = re.compile(r"^\s*(rewrite|summari[sz]e|paraphrase|correct|translate|shorten|simplify|"
                           r"turn (this|the following)|proofread|edit)\b", re.IGNORECASE | re.MULTILINE)


def prompt_kind(text: str) -> str:
    """"code" (code fences, def/class/import, "Python", "function", "code"), "rewrite" (an instruction to
    rewrite, summarise, paraphrase, correct … a given text) or "chat" (anything else)."""
    text = text or ""
    if CODE_MARKS.search(text):
        return "code"
    if REWRITE_MARKS.search(text):
        return "rewrite"
    return "chat"


def card_mode(sampling: bool) -> str:
    """The cards' setting nearest a run's: "greedy", or "T0.7" for any temperature above 0."""
    return "T0.7" if sampling else "greedy"


def alpha_from_tokens(tokens_per_forward: float, k: int = CARD_K) -> float:
    """The alpha whose E(alpha, k) is the given tokens per target forward (bisection; clipped to [0, 0.999])."""
    lo, hi = 0.0, 0.999
    if tokens_per_forward <= 1.0:
        return 0.0
    if tokens_per_forward >= expected_tokens_per_forward(hi, k):
        return hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_tokens_per_forward(mid, k) < tokens_per_forward else (lo, mid)
    return (lo + hi) / 2


def card_alpha(card: dict, kind: str, mode: str) -> Optional[float]:
    """alpha for (kind, mode) from a model card's figures; None when the card has none."""
    figures = (card.get("figures") or {}).get(mode, {}).get(kind)
    if not figures or not figures.get("tokens_per_forward"):
        return None
    return alpha_from_tokens(figures["tokens_per_forward"])


def read_card(folder: Path) -> Optional[dict]:
    try:
        return json.loads((folder / "card.json").read_text())
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class DrafterCosts:
    """One drafter's measured costs on this machine (auto_costs.py), as ratios to a target-only step.

    c: K -> drafting time per drafted token / a plain step; v: K -> the step's target side (verification of
    K + 1 tokens, or of a tree's nodes, and the step's bookkeeping) / a plain step; tree: K is a tree's depth."""

    name: str
    c: dict
    v: dict
    tree: bool = False
    plain_ms: float = 0.0  # the probe's median target-only step
    measured_at: str = ""
    measured_s: float = 0.0

    def ks(self, k_max: int) -> list[int]:
        """The Ks this drafter may be chosen at: measured ones up to k_max (a tree: its cards' depth only)."""
        if self.tree:
            return [CARD_K] if CARD_K in self.c and CARD_K in self.v and CARD_K <= k_max else []
        return [k for k in sorted(self.c) if k in self.v and k <= k_max]

    @classmethod
    def from_dict(cls, data: dict) -> "DrafterCosts":
        data = dict(data)
        data["c"] = {int(k): float(x) for k, x in data["c"].items()}
        data["v"] = {int(k): float(x) for k, x in data["v"].items()}
        return cls(**data)


@dataclass(frozen=True)
class Candidate:
    drafter: str
    k: int
    alpha: float
    c: float
    v: float
    predicted: float
    tree: bool = False

    def describe(self) -> str:
        shape = f"tree depth {self.k}" if self.tree else f"K={self.k}"
        return (f"{self.drafter}, {shape}: predicted {self.predicted:.2f}x from c={self.c:.3f}, "
                f"v({self.k})={self.v:.2f}, α={self.alpha:.2f}")


@dataclass
class AutoChoice:
    """What `auto` chose for one run, and why. drafter: the candidate to load (None: no candidate at all);
    speculate: False when no candidate predicts a speedup (the run starts with speculation off)."""

    kind: str
    mode: str
    best: Optional[Candidate]
    ranking: list[Candidate] = field(default_factory=list)
    why: str = ""

    @property
    def drafter(self) -> Optional[str]:
        return self.best.drafter if self.best else None

    @property
    def speculate(self) -> bool:
        return self.best is not None and self.best.predicted > 1.0

    def to_dict(self) -> dict:
        return {"drafter": self.drafter, "k": self.best.k if self.best else None, "speculate": self.speculate,
                "predicted_speedup": self.best.predicted if self.best else None, "prompt_kind": self.kind,
                "mode": self.mode, "why": self.why, "ranking": [asdict(c) for c in self.ranking]}


def pool_target_side(costs: dict) -> dict:
    """The chain candidates' v(K) replaced by their median per K: a chain step's target side (verifying K + 1
    tokens and the bookkeeping) is the same work whichever drafter proposed the tokens, so what tells their probes
    apart there is load from other processes; pooled, the choice between drafters rests on alpha and c. Trees keep
    their own (a tree's verification scores its nodes)."""
    chains = [cost for cost in costs.values() if not cost.tree]
    ks = {k for cost in chains for k in cost.v}
    pooled = {k: statistics.median(cost.v[k] for cost in chains if k in cost.v) for k in ks}
    return {name: cost if cost.tree else replace(cost, v={k: pooled[k] for k in cost.v})
            for name, cost in costs.items()}


def rank(costs: dict, alphas: dict, k_max: int) -> list[Candidate]:
    """Every (drafter, K) with both an alpha and measured costs, best predicted speedup first."""
    out = []
    for name, cost in costs.items():
        alpha = alphas.get(name)
        if alpha is None:
            continue
        for k in cost.ks(k_max):
            out.append(Candidate(name, k, alpha, cost.c[k], cost.v[k],
                                 theoretical_speedup(alpha, k, cost.c[k], cost.v[k]), cost.tree))
    return sorted(out, key=lambda c: -c.predicted)


def choose(costs: dict, alphas: dict, k_max: int, kind: str = "chat", mode: str = "greedy") -> AutoChoice:
    """The best (drafter, K) by predicted speedup, and the sentence the cards show."""
    ranking = rank(costs, alphas, k_max)
    if not ranking:
        return AutoChoice(kind, mode, None, [], "speculation off: no drafter of this target has both measured "
                          f"acceptance ({kind}, {mode}) and measured costs here; target-only")
    best = ranking[0]
    runner_up = next((c for c in ranking if c.drafter != best.drafter), None)
    also = f"; next: {runner_up.drafter} {runner_up.predicted:.2f}x" if runner_up else ""
    if best.predicted > 1.0:
        why = f"auto chose {best.describe()} ({kind} prompt, {mode}){also}"
    else:
        why = (f"speculation off: no drafter predicts a speedup for a {kind} prompt ({mode}); best "
               f"{best.describe()}; target steps, probing now and then")
    return AutoChoice(kind, mode, best, ranking, why)
