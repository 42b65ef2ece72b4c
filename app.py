"""SpecDec Lab web app: `python app.py` serves on http://127.0.0.1:7860 (see --help).

Flags: --host, --port, --share (or SPECDEC_HOST, SPECDEC_PORT, SPECDEC_SHARE; every SPECDEC_* variable:
docs/configuration.md). On a Hugging Face Space this file is the app_file; the defaults then follow the Space's
GRADIO_SERVER_NAME/PORT.
"""
import logging
import os
import sys

# On a Space with persistent storage, Hub downloads (online pairs) survive restarts there too; the fetched
# SmolLM2 goes to /data/specdec by itself (specdec/models/fetch.py). Before huggingface_hub reads HF_HOME.
if os.environ.get("SPACE_ID") and os.path.isdir("/data") and os.access("/data", os.W_OK):
    os.environ.setdefault("HF_HOME", "/data/huggingface")

# Importing specdec first runs the process-wide set-up (specdec/process.py: the OpenMP wait policy, before torch
# starts its thread pool), the same as `python -m specdec` and the scripts get.
from specdec.ui.launch import parse_options, serve  # noqa: E402

try:  # on ZeroGPU `spaces` must come before anything initialises CUDA (layout.on_gpu uses it); elsewhere absent
    import spaces  # noqa: F401,E402
except ImportError:
    pass


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    serve(parse_options(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
