"""Whether the Hugging Face Hub can be reached from here: asked by loading (online models) and fetch (the
default target's source), before anything is downloaded."""
from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlparse


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether a TCP connection to the hub endpoint opens within timeout_s (never hangs longer)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    result: list[bool] = []

    def attempt():
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=attempt, daemon=True)  # DNS look-ups ignore socket timeouts
    worker.start()
    worker.join(timeout_s + 0.5)
    return bool(result and result[0])
