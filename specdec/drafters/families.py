"""The drafter families for "How it works": what each drafter reads from the target, what it proposes
(a small text diagram), and the figures its model card measured (card.json, written by
``python -m training zoo --stage cards``). Plain Markdown; reads JSON only."""
from __future__ import annotations

import json
from pathlib import Path

KIND_NAMES = {"chat": "chat", "code": "code", "rewrite": "rewriting"}
PROMPT_LOOKUP_NOTE = ("Costs almost nothing; pays on text that copies its prompt (rewriting, code edits), drafts nothing "
                      "elsewhere.")
SUFFIX_NOTE = ("Costs almost nothing; pays where requests repeat structure (successive edits of one file, agents, "
               "chats quoting earlier turns): it remembers earlier outputs in this process. Not one of auto's "
               "candidates (no model card: its acceptance depends on the workload's repeats). Public deployments: a "
               "session drafts from its own earlier outputs only.")
MODEL_FREE_NOTES = {"prompt lookup": PROMPT_LOOKUP_NOTE, "suffix decoding": SUFFIX_NOTE}  # family -> its note


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
        return "Not measured here (no model card)."


def paragraph(spec, figures: str) -> list[str]:
    """A drafter's heading, what it reads and proposes, its diagram, then `figures`."""
    return [f"**{spec.title or spec.family}** (`{spec.name}`): {spec.summary}.", "", f"`{spec.diagram}`", "", figures]


def families_markdown(folder: Path | None = None) -> str:
    """One paragraph per zoo drafter (description, diagram, its card's figures) after the model-free drafters'
    (prompt lookup, suffix decoding)."""
    from specdec.drafters.registry import SHIPPED, SPECS
    from specdec.drafters.shipped import ASSETS

    folder = Path(folder) if folder is not None else ASSETS
    parts = ["### Drafter families (SmolLM2-135M-Instruct)"]
    for spec in SPECS:
        if spec.family in MODEL_FREE_NOTES:
            parts += ["", *paragraph(spec, MODEL_FREE_NOTES[spec.family])]
    for spec in SHIPPED:
        parts += ["", *paragraph(spec, _measured(folder, spec.name))]
    parts += ["", "More candidates per target forward (the target's token is often the head's second or third "
              "choice); each extra node is one more row for the target to score, which a GPU hides and this CPU "
              "does not. docs/zoo.md, \"EAGLE-2 trees\", has the measurements."]
    parts += ["", "Speedups are single timed runs per prompt on this project's 2-core CPU (about ±0.1); each card "
              "(assets/drafters/<name>/README.md) and docs/zoo.md give the whole table and the recipe."]
    return "\n".join(parts)
