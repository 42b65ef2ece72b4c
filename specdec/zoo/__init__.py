"""The draft zoo: four drafters trained by this project for SmolLM2-135M-Instruct.

  smollm2-135m-draft       a 2-layer draft model on the target's embedding, norm and draft-vocabulary head rows
  smollm2-135m-early-exit  the target's first 6 layers + a trained adapter layer, draft-vocabulary head rows
  smollm2-135m-medusa      4 Medusa heads on the target's last hidden state
  smollm2-135m-eagle       an EAGLE-style head: one decoder layer over [feature; next-token embedding]

Weights and model cards live in assets/drafters/<name>/ (built by ``python -m specdec.train zoo``);
docs/zoo.md explains each family. Importing this module registers the four names, and the EAGLE
head's two tree drafts (TREES), with specdec.drafters.registry (the registry imports it lazily).
"""
from __future__ import annotations

from ..drafters.registry import DrafterSpec, register
from ..tree import TreeShape
from .build import TARGET, build_draft_model, build_eagle, build_early_exit, build_medusa, drafter_dir

DESCRIPTIONS = {
    "smollm2-135m-draft": "draft model: 2 own decoder layers on the target's embedding and head (14 MB); "
                          "reads only tokens; costs 2 layers + a 12k-token head per drafted token",
    "smollm2-135m-early-exit": "early exit: the target's first 6 of 30 layers + a trained adapter layer (7 MB); "
                               "reads only tokens; costs 7 layers + a 12k-token head per drafted token",
    "smollm2-135m-medusa": "Medusa: 4 residual heads on the target's last hidden state (2.7 MB); "
                           "reads the target's features; costs 4 small blocks + a 12k-token head, once for all K tokens",
    "smollm2-135m-eagle": "EAGLE: one decoder layer over [target feature; next-token embedding] (8.4 MB); "
                          "reads the target's features; costs 1 layer + a 12k-token head per drafted token",
}
FAMILIES = {
    "smollm2-135m-draft": "draft model",
    "smollm2-135m-early-exit": "early exit",
    "smollm2-135m-medusa": "medusa",
    "smollm2-135m-eagle": "eagle",
}
NAMES = tuple(DESCRIPTIONS)
EAGLE, EAGLE_TREE, EAGLE_TREE_60 = "smollm2-135m-eagle", "smollm2-135m-eagle-tree", "smollm2-135m-eagle-tree-60"
# The EAGLE head's tree drafts (EAGLE-2): a small tree, and EAGLE-2's own GPU setting (top-10, 60 nodes).
TREES = {EAGLE_TREE: TreeShape(top=3, beam=3, nodes=8), EAGLE_TREE_60: TreeShape(top=10, beam=10, nodes=60)}
TREE_COSTS = {EAGLE_TREE: "", EAGLE_TREE_60: "; built for a GPU, where scoring 61 tokens costs about what 1 does"}


def tree_description(name: str) -> str:
    shape = TREES[name]
    return (f"EAGLE-2 tree: the same head drafts a tree of {shape.nodes} tokens (the {shape.top} likeliest children "
            f"of the {shape.beam} likeliest nodes per level; at T > 0 drawn from q), verified in one target "
            f"forward{TREE_COSTS[name]}")


def available(name: str) -> bool:
    return (drafter_dir(name) / "model.safetensors").exists()


def _builder(name: str):
    description = DESCRIPTIONS[name]

    def build(target, load_model=None):
        if name == "smollm2-135m-draft":
            drafter = build_draft_model(target, name)
        elif name == "smollm2-135m-early-exit":
            drafter = build_early_exit(target, name)
        elif name == "smollm2-135m-medusa":
            return build_medusa(target, name, description)
        else:
            return build_eagle(target, name, description)
        drafter.family = FAMILIES[name]
        drafter.description = description
        return drafter

    return build


for _name in NAMES:
    if available(_name):
        register(DrafterSpec(name=_name, family=FAMILIES[_name], description=DESCRIPTIONS[_name],
                             build=_builder(_name), targets=(TARGET,)))


def _tree_builder(name: str):
    def build(target, load_model=None):
        drafter = build_eagle(target, name, tree_description(name), drafter_dir(EAGLE))
        drafter.tree_shape = TREES[name]
        return drafter

    return build


if available(EAGLE):
    for _name in TREES:
        register(DrafterSpec(name=_name, family="eagle", description=tree_description(_name),
                             build=_tree_builder(_name), targets=(TARGET,)))
