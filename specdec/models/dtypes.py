"""The dtype names the CLI, the app and the caches use, and the size below which `auto` keeps float32.

Besides torch's dtypes, a model carried as a GGUF file (SmolLM2, fetch.py) runs from its blocks: "q4_1" (the file as
published) and "q8_0" (requantised from it): BLOCK_FORMATS, run on the lab kernels in float32 activations
(block_model.py); `--dtype` takes them and the measured `auto` tries them (runners/tuning.py).
"""
from __future__ import annotations

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
BLOCK_FORMATS = ("q4_1", "q8_0")  # a GGUF's blocks (gguf_files.py), for the models carried as one
PUBLISHED_FORMAT = "q4_1"  # the fetched file's own
BF16_MIN_PARAMS = 50_000_000  # chosen, not a measured crossover: small models stay float32 (docs/models.md)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def block_weights_label(fmt: str) -> str:
    """Which weights ran, in words: 'Q4_1 as published', 'Q8_0 requantised from Q4_1'."""
    return "Q4_1 as published" if fmt == PUBLISHED_FORMAT else f"{fmt.upper()} requantised from Q4_1"
