"""Model shapes and build profiles (how many tokens each model sees)."""
from __future__ import annotations

from dataclasses import dataclass

TARGET = "lab-target"
DRAFT_SMALL = "lab-draft-small"
DRAFT_DISTILLED = "lab-draft-distilled"
DRAFT_TINY = "lab-draft-tiny"
MAX_POSITIONS = 1024


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    layers: int
    heads: int
    intermediate: int


@dataclass(frozen=True)
class RunSpec:
    """One model to build: its shape, token budget and optimiser settings."""

    name: str
    role: str  # "target" | "draft"
    shape: ModelShape
    tokens: int
    lr: float
    warmup_steps: int
    teacher: str | None = None  # distil from this model's soft labels instead of the corpus


@dataclass(frozen=True)
class Profile:
    name: str
    vocab_size: int
    batch: int
    seq_len: int
    prose_weight: float  # share of training windows drawn from prose (prose is upsampled)
    max_code_files: int | None
    max_topics: int | None
    eval_windows: int
    heldout_every: int  # about one in this many files / topics is held out
    runs: tuple[RunSpec, ...]


TARGET_SHAPE = ModelShape(hidden=256, layers=6, heads=4, intermediate=704)
DRAFT_SHAPE = ModelShape(hidden=128, layers=2, heads=2, intermediate=352)
TINY_SHAPE = ModelShape(hidden=64, layers=1, heads=1, intermediate=176)
TEST_SHAPE = ModelShape(hidden=32, layers=1, heads=1, intermediate=64)


def family_runs(target_tokens: int, draft_tokens: int, tiny_tokens: int, distil_tokens: int,
                shapes=(TARGET_SHAPE, DRAFT_SHAPE, TINY_SHAPE), warmup: int = 100) -> tuple[RunSpec, ...]:
    target_shape, draft_shape, tiny_shape = shapes
    return (
        RunSpec(TARGET, "target", target_shape, target_tokens, 1.5e-3, warmup),
        RunSpec(DRAFT_SMALL, "draft", draft_shape, draft_tokens, 3e-3, warmup),
        RunSpec(DRAFT_TINY, "draft", tiny_shape, tiny_tokens, 4e-3, warmup),
        RunSpec(DRAFT_DISTILLED, "draft", draft_shape, distil_tokens, 3e-3, warmup, teacher=TARGET),
    )


PROFILES: dict[str, Profile] = {
    "full": Profile(
        name="full", vocab_size=4096, batch=16, seq_len=256, prose_weight=0.35,
        max_code_files=None, max_topics=None, eval_windows=48, heldout_every=40,
        runs=family_runs(3_500_000, 3_000_000, 2_000_000, 2_500_000),
    ),
    "smoke": Profile(
        name="smoke", vocab_size=4096, batch=16, seq_len=256, prose_weight=0.35,
        max_code_files=300, max_topics=None, eval_windows=8, heldout_every=20,
        runs=family_runs(160_000, 120_000, 80_000, 80_000, warmup=10),
    ),
    "tiny": Profile(
        name="tiny", vocab_size=400, batch=4, seq_len=32, prose_weight=0.35,
        max_code_files=12, max_topics=6, eval_windows=2, heldout_every=3,
        runs=family_runs(512, 512, 256, 256, shapes=(TEST_SHAPE,) * 3, warmup=1),
    ),
}
