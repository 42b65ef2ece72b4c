"""One entry per built-in drafter: everything the CLI, the app, How it works and the cost model know of it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from specdec.engine.tree import TreeShape


def always() -> bool:
    return True


@dataclass(frozen=True)
class DrafterSpec:
    name: str  # the same in --draft, the app's draft lists, presets and exports
    family: str  # "draft model" | "prompt lookup" | "early exit" | "medusa" | "eagle"
    description: str  # one line: what it reads from the target, what it costs
    build: Callable  # (target: LoadedModel, load_model: Callable) -> Drafter
    targets: tuple[str, ...] = ()  # target names it was made for; empty: any target
    title: str = ""  # How it works' heading for it ("EAGLE-2 tree"); empty: the family
    summary: str = ""  # How it works' sentence on what it reads and proposes (the description is a line of it)
    diagram: str = ""  # How it works' one-line text diagram of what it reads and proposes
    tree: Optional[TreeShape] = None  # a tree draft's shape (EAGLE-2); None: it drafts chains
    available: Callable[[], bool] = always  # False: its weights are not on this machine (not listed)
