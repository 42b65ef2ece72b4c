"""The draft zoo: five drafters trained by this project for SmolLM2-135M-Instruct, and tree drafts of the
EAGLE and EAGLE-3 heads, each one entry of SPECS (name, family, description, diagram, builder, tree shape).

  smollm2-135m-draft       a 2-layer draft model on the target's embedding, norm and draft-vocabulary head rows
  smollm2-135m-early-exit  the target's first 6 layers + a trained adapter layer, draft-vocabulary head rows
  smollm2-135m-medusa      4 Medusa heads on the target's last hidden state
  smollm2-135m-eagle       an EAGLE-style head: one decoder layer over [feature; next-token embedding]
  smollm2-135m-eagle-tree, smollm2-135m-eagle-tree-60    the EAGLE head drafting EAGLE-2 trees (8 and 60 nodes)
  smollm2-135m-eagle3      an EAGLE-3 head: the same, over a fusion of the target's layers 2, 15 and 27
  smollm2-135m-eagle3-tree the EAGLE-3 head drafting EAGLE-2 trees of 8 nodes

Weights and model cards live in assets/drafters/<name>/ (built by ``python -m training zoo``);
docs/zoo.md explains each family. specdec.drafters.registry lists SPECS after prompt lookup.
"""
from __future__ import annotations

from typing import Callable, Optional

from specdec.drafters.shipped_build import (
    TARGET,
    build_draft_model,
    build_eagle,
    build_early_exit,
    build_medusa,
    drafter_dir,
)
from specdec.drafters.spec import DrafterSpec
from specdec.engine.tree import TreeShape

EAGLE, EAGLE_TREE, EAGLE_TREE_60 = "smollm2-135m-eagle", "smollm2-135m-eagle-tree", "smollm2-135m-eagle-tree-60"
EAGLE3, EAGLE3_TREE = "smollm2-135m-eagle3", "smollm2-135m-eagle3-tree"
TREE_DIAGRAM = ("the {head} head's top {top} children of its {beam} likeliest nodes per level ──▶ a tree of {nodes} "
                "tokens ──▶ one target forward (each node sees only its ancestors) ──▶ the branch that matches the "
                "target's choices")


def available(name: str) -> bool:
    return (drafter_dir(name) / "model.safetensors").exists()


def zoo_spec(name: str, family: str, title: str, summary: str, diagram: str, make: Callable,
             tree: Optional[TreeShape] = None, weights: Optional[str] = None) -> DrafterSpec:
    """One zoo entry: make(target, name, description, folder) builds the drafter from the weights in
    assets/drafters/<weights or name>; a tree entry drafts trees of its shape with those weights."""
    description = f"{title}: {summary}"
    folder = weights or name

    def build(target, load_model=None):
        drafter = make(target, name, description, drafter_dir(folder))
        drafter.tree_shape = tree
        return drafter

    return DrafterSpec(name=name, family=family, description=description, build=build, targets=(TARGET,),
                       title=title, summary=summary, diagram=diagram, tree=tree, available=lambda: available(folder))


def tree_spec(name: str, shape: TreeShape, cost_note: str = "", weights: str = EAGLE, head: str = "EAGLE") -> DrafterSpec:
    """An EAGLE-2 tree draft of the head in assets/drafters/<weights>."""
    summary = (f"the {head} head drafts a tree of {shape.nodes} tokens (the {shape.top} likeliest children of the "
               f"{shape.beam} likeliest nodes per level; at T > 0 drawn from q), verified in one target forward"
               f"{cost_note}")
    diagram = TREE_DIAGRAM.format(head=head, top=shape.top, beam=shape.beam, nodes=shape.nodes)
    title = "EAGLE-2 tree" if head == "EAGLE" else f"EAGLE-2 tree of the {head} head"
    return zoo_spec(name, "eagle", title, summary, diagram, build_eagle, tree=shape, weights=weights)


SPECS = (
    zoo_spec("smollm2-135m-draft", "draft model", "draft model",
             "2 own decoder layers on the target's embedding and head (14 MB); reads only tokens; costs 2 layers + "
             "a 12k-token head per drafted token",
             "tokens ──▶ target embedding ──▶ 2 own layers ──▶ target norm + head rows ──▶ x̂₁, then x̂₁ ──▶ … x̂_K",
             build_draft_model),
    zoo_spec("smollm2-135m-early-exit", "early exit", "early exit",
             "the target's first 6 of 30 layers + a trained adapter layer (7 MB); reads only tokens; costs 7 layers "
             "+ a 12k-token head per drafted token",
             "tokens ──▶ target layers 1–6 ──▶ adapter layer ──▶ target norm + head rows ──▶ x̂₁ … x̂_K (one at a time)",
             build_early_exit),
    zoo_spec("smollm2-135m-medusa", "medusa", "Medusa",
             "4 residual heads on the target's last hidden state (2.7 MB); reads the target's features; costs 4 "
             "small blocks + a 12k-token head, once for all K tokens",
             "target's last feature h ──▶ residual head k (k = 1…4) ──▶ target head rows ──▶ x̂₁ … x̂_K (all at once)",
             build_medusa),
    zoo_spec("smollm2-135m-eagle", "eagle", "EAGLE",
             "one decoder layer over [target feature; next-token embedding] (8.4 MB); reads the target's "
             "features; costs 1 layer + a 12k-token head per drafted token",
             "[h_t ; embedding of x_t+1] ──▶ 1 decoder layer ──▶ predicted h_t+1 ──▶ target head rows ──▶ x̂, "
             "then [predicted h ; x̂] ──▶ … (K times)",
             build_eagle),
    # The EAGLE head's tree drafts (EAGLE-2): a small tree, and EAGLE-2's own GPU setting (top-10, 60 nodes).
    tree_spec(EAGLE_TREE, TreeShape(top=3, beam=3, nodes=8)),
    tree_spec(EAGLE_TREE_60, TreeShape(top=10, beam=10, nodes=60),
              "; built for a GPU, where scoring 61 tokens costs about what 1 does"),
    zoo_spec(EAGLE3, "eagle", "EAGLE-3",
             "one decoder layer over [next-token embedding; a fusion of the target's layers 2, 15 and 27], the layer "
             "vLLM's eagle3 runs (7.1 MB); reads three of the target's layers; costs 1 layer + a 12k-token head per "
             "drafted token",
             "[embedding of x_t+1 ; fc(h²_t ; h¹⁵_t ; h²⁷_t)] ──▶ 1 decoder layer ──▶ ĥ_t+1 ──▶ norm, target head rows "
             "──▶ x̂, then [x̂ ; ĥ] ──▶ … (K times)",
             build_eagle),
    tree_spec(EAGLE3_TREE, TreeShape(top=3, beam=3, nodes=8), weights=EAGLE3, head="EAGLE-3"),
)
NAMES = tuple(spec.name for spec in SPECS if spec.tree is None)  # the trained drafters (one weights folder each)
TREES = {spec.name: spec.tree for spec in SPECS if spec.tree is not None}
WEIGHTS = {EAGLE_TREE: EAGLE, EAGLE_TREE_60: EAGLE, EAGLE3_TREE: EAGLE3}  # a tree draft -> its head's folder
BY_NAME = {spec.name: spec for spec in SPECS}
