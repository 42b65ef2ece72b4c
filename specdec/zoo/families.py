"""The drafter families for "How it works": what each drafter reads from the target, what it proposes
(a small text diagram), and the figures its model card measured (card.json, written by
``python -m specdec.train zoo --stage cards``). Plain Markdown; reads JSON only."""
from __future__ import annotations

import json
from pathlib import Path

DIAGRAMS = {
    "smollm2-135m-draft": "tokens ──▶ target embedding ──▶ 2 own layers ──▶ target norm + head rows ──▶ x̂₁, then x̂₁ ──▶ … x̂_K",
    "smollm2-135m-early-exit": "tokens ──▶ target layers 1–6 ──▶ adapter layer ──▶ target norm + head rows ──▶ x̂₁ … x̂_K (one at a time)",
    "smollm2-135m-medusa": "target's last feature h ──▶ residual head k (k = 1…4) ──▶ target head rows ──▶ x̂₁ … x̂_K (all at once)",
    "smollm2-135m-eagle": "[h_t ; embedding of x_t+1] ──▶ 1 decoder layer ──▶ predicted h_t+1 ──▶ target head rows ──▶ x̂, "
                          "then [predicted h ; x̂] ──▶ … (K times)",
}
TREE_DIAGRAM = ("the EAGLE head's top {top} children of its {beam} likeliest nodes per level ──▶ a tree of {nodes} tokens "
                "──▶ one target forward (each node sees only its ancestors) ──▶ the branch that matches the target's choices")
PROMPT_LOOKUP = ("**Prompt lookup** (`prompt-lookup`, no weights): finds the last few generated tokens earlier in the "
                 "prompt and proposes what followed them there.\n\n"
                 "`last n-gram ──▶ match in prompt + output so far ──▶ the K tokens after the match (or none)`\n\n"
                 "Costs almost nothing; pays on text that copies its prompt (rewriting, code edits), drafts nothing "
                 "elsewhere.")
KIND_NAMES = {"chat": "chat", "code": "code", "rewrite": "rewriting"}


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


def families_markdown(folder: Path | None = None) -> str:
    """One paragraph per zoo drafter (description, diagram, its card's figures) after prompt lookup's."""
    from . import DESCRIPTIONS, TREES, tree_description
    from .build import ASSETS

    folder = Path(folder) if folder is not None else ASSETS
    parts = ["### Drafter families (SmolLM2-135M-Instruct)", "", PROMPT_LOOKUP]
    for name, description in DESCRIPTIONS.items():
        parts += ["", f"**{description.split(':')[0]}** (`{name}`): {description.split(': ', 1)[-1]}.", "",
                  f"`{DIAGRAMS[name]}`", "", _measured(folder, name)]
    for name, shape in TREES.items():
        diagram = TREE_DIAGRAM.format(top=shape.top, beam=shape.beam, nodes=shape.nodes)
        parts += ["", f"**EAGLE-2 tree** (`{name}`): {tree_description(name).split(': ', 1)[-1]}.", "", f"`{diagram}`",
                  "", _measured(folder, name)]
    parts += ["", "More candidates per target forward (the target's token is often the head's second or third "
              "choice); each extra node is one more row for the target to score, which a GPU hides and this CPU "
              "does not. docs/zoo.md, \"EAGLE-2 trees\", has the measurements."]
    parts += ["", "Speedups are single timed runs per prompt on this project's 2-core CPU (about ±0.1); each card "
              "(assets/drafters/<name>/README.md) and docs/zoo.md give the whole table and the recipe."]
    return "\n".join(parts)
