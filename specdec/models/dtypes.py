"""The dtype names the CLI, the app and the caches use, and the size below which `auto` keeps float32."""
from __future__ import annotations

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
BF16_MIN_PARAMS = 50_000_000  # chosen, not a measured crossover: small models stay float32 (docs/models.md)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")
