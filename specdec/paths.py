"""Where things live: the repository's folders, and the cache every part of the lab writes to.

Everything that needs a path asks here, so a folder is named once: models (fetched models), runners (built
kernels, tuning records), vLLM (its venv, exports, server records) and the app (the class's shared results).
"""
from __future__ import annotations

import os
from pathlib import Path

from specdec import config

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS_DIR = REPO_ROOT / "assets"
BUNDLED_MODELS_DIR = ASSETS_DIR / "models"  # the lab family, shipped with the code
SHIPPED_DRAFTERS_DIR = ASSETS_DIR / "drafters"  # the trained drafters' weights and model cards
PERSISTENT_STORAGE = Path("/data")  # where a Hugging Face Space mounts its persistent storage, when it has some


def persistent_storage() -> Path | None:
    """/data on a Space (SPACE_ID set) that has persistent storage (the folder exists and is writable)."""
    root = PERSISTENT_STORAGE
    if os.environ.get("SPACE_ID") and root.is_dir() and os.access(root, os.W_OK):
        return root
    return None


def cache_dir() -> Path:
    """SPECDEC_CACHE; else a Space's persistent storage (/data/specdec); else ~/.cache/specdec."""
    configured = config.get("SPECDEC_CACHE")
    if configured is not None:
        return configured
    storage = persistent_storage()
    return storage / "specdec" if storage is not None else Path("~/.cache/specdec").expanduser()
