"""The drafter families for "How it works": what each drafter reads from the target, what it proposes
(a small text diagram), and what is known of its cost: the figures its model card measured (card.json, written by
``python -m training zoo --stage cards``), else its spec's own note. Every paragraph comes from a DrafterSpec of a
family in registry.FAMILIES, read when asked, so a new family's one registry line gives it a paragraph. Plain
Markdown; reads JSON only."""
from __future__ import annotations

import json
from pathlib import Path

KIND_NAMES = {"chat": "chat", "code": "code", "rewrite": "rewriting"}
NOT_MEASURED = "Not measured here (no model card)."


def _figures(card: dict) -> str:
    greedy = card["figures"]["greedy"]
    per_kind = ", ".join(f"{KIND_NAMES[k]} {f['tokens_per_forward']:.2f} tok/fwd ({f['speedup']:.2f}x)"
                         for k, f in greedy.items() if k in KIND_NAMES)
    ks = card.get("best_k_greedy_chat") or {}
    best = f"; best K on chat: {max(ks, key=ks.get)} ({max(ks.values()):.2f}x)" if ks else ""
    return f"Measured at K=4, greedy, held-out prompts: {per_kind}{best}."


def _measured(folder: Path, name: str) -> str:
    try:
        return _figures(json.loads((folder / name / "card.json").read_text()))
    except (OSError, ValueError, KeyError):
        return NOT_MEASURED


def paragraph(spec, figures: str) -> list[str]:
    """A drafter's heading, what it reads and proposes, its diagram, then `figures`."""
    return [f"**{spec.title or spec.family}** (`{spec.name}`): {spec.summary}.", "", f"`{spec.diagram}`", "", figures]


def known_cost(spec, folder: Path) -> str:
    """What How it works says of a drafter's cost: its model card's figures where it ships weights (after its note,
    if it has one), else its note, else that it was not measured."""
    measured = _measured(folder, spec.name) if spec.weights else ""
    return " ".join(part for part in (spec.note, measured) if part) or NOT_MEASURED


def families_markdown(folder: Path | None = None) -> str:
    """One paragraph per named drafter of the registry's families (registry.builtin_specs: those on this machine),
    those without weights first (prompt lookup, suffix decoding, a plugged-in family's), then the zoo's."""
    from specdec.drafters.registry import builtin_specs
    from specdec.drafters.shipped import ASSETS

    folder = Path(folder) if folder is not None else ASSETS
    parts = ["### Drafter families (SmolLM2-135M-Instruct)"]
    for spec in sorted(builtin_specs(), key=lambda spec: bool(spec.weights)):
        parts += ["", *paragraph(spec, known_cost(spec, folder))]
    parts += ["", "More candidates per target forward (the target's token is often the head's second or third "
              "choice); each extra node is one more row for the target to score, which a GPU hides and this CPU "
              "does not. docs/zoo.md, \"EAGLE-2 trees\", has the measurements."]
    parts += ["", "Speedups are single timed runs per prompt on this project's 2-core CPU (about ±0.1); each card "
              "(assets/drafters/<name>/README.md) and docs/zoo.md give the whole table and the recipe."]
    return "\n".join(parts)
