"""The shipped weights: the trained drafters for SmolLM2-135M-Instruct, each a folder assets/drafters/<name>/
holding its weights (model.safetensors), its recipe (zoo.json) and its model card (card.json, README.md), and
the helpers every family uses to read them. `python -m training zoo` builds them (docs/zoo.md).

Which drafters ship is said by their families' files (draft_model.py, early_exit.py, medusa.py, eagle.py,
eagle3.py); registry.SHIPPED lists them all.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

from specdec.drafters.base import DrafterSpec
from specdec.engine.tree import TreeShape
from specdec.paths import SHIPPED_DRAFTERS_DIR

import torch

ASSETS = SHIPPED_DRAFTERS_DIR
TARGET = "smollm2-135m-instruct"  # the target every shipped drafter was trained for


def drafter_dir(name: str) -> Path:
    return ASSETS / name


def available(name: str) -> bool:
    """Whether the weights folder `name` is on this machine."""
    return (drafter_dir(name) / "model.safetensors").exists()


def read_meta(folder: Path) -> dict:
    return json.loads((Path(folder) / "zoo.json").read_text())


def draft_vocab_rows(meta: dict) -> Optional[int]:
    """A shipped drafter's draft-vocabulary size from its zoo.json (None: the target's whole head)."""
    return meta.get("data", {}).get("draft_vocab")


def load_tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(Path(folder) / "model.safetensors"))


def save_tensors(folder: Path, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: (v.detach().to(torch.bfloat16) if v.is_floating_point() else v.detach()).contiguous()
               for k, v in tensors.items()},
              str(folder / "model.safetensors"))
    (folder / "model.safetensors").chmod(0o644)  # save_file creates it owner-only
    (folder / "zoo.json").write_text(json.dumps(meta, indent=1) + "\n")


def prefixed(tensors: dict, prefix: str) -> dict:
    """The tensors under `prefix`, renamed without it, as float32 tensors of float16 values (float16_valued)."""
    return {k[len(prefix):]: float16_valued(v) for k, v in tensors.items() if k.startswith(prefix)}


def float16_valued(stored: torch.Tensor) -> torch.Tensor:
    """A stored bfloat16 weight as float32 holding the nearest float16 values. bfloat16 keeps 8 significant
    bits, float16 11, so only weights below float16's normal range (|w| < 6.1e-5) lose bits; in exchange every
    matrix is exact in float16 and a float32 run multiplies it through its float16 copy (packed_weights.py),
    as the target's are, which is faster on CPUs whose float16 products beat their float32 ones (docs/zoo.md,
    "Loading")."""
    return stored.to(torch.float16).float()


def shipped_spec(drafter: type, name: str, title: str, summary: str, diagram: str, make: Callable,
                 tree: Optional[TreeShape] = None, weights: Optional[str] = None) -> DrafterSpec:
    """A shipped drafter: make(target, name, description, folder) builds it from the weights in
    assets/drafters/<weights or name>; a tree entry drafts trees of its shape with those weights."""
    description = f"{title}: {summary}"
    folder = weights or name

    def build(target, load_model=None):
        built = make(target, name, description, drafter_dir(folder))
        built.tree_shape = tree
        return built

    return DrafterSpec(name=name, drafter=drafter, description=description, build=build, targets=(TARGET,),
                       title=title, summary=summary, diagram=diagram, tree=tree,
                       available=lambda: available(folder), weights=folder)
