"""SpecDec Lab web app: `python app.py` serves on http://127.0.0.1:7860 (see --help).

Flags: --host, --port, --share (or SPECDEC_HOST, SPECDEC_PORT, SPECDEC_SHARE). On a Hugging Face
Space this file is the app_file; the defaults then follow the Space's GRADIO_SERVER_NAME/PORT.
"""
import logging
import os
import sys

# Before torch is imported: OpenMP threads yield instead of spin-waiting. On a CPU shared with other
# processes (a Space, a busy laptop) spinning threads can stall every step ~10x (measured here: an 8x3
# sweep took 7-8 s with it, 16-340 s without, while other processes were busy). Set it to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# On a Space with persistent storage, Hub downloads (online pairs) survive restarts there too; the fetched
# SmolLM2 goes to /data/specdec by itself (specdec/fetch.py). Before huggingface_hub reads HF_HOME.
if os.environ.get("SPACE_ID") and os.path.isdir("/data") and os.access("/data", os.W_OK):
    os.environ.setdefault("HF_HOME", "/data/huggingface")

try:  # on ZeroGPU `spaces` must come before torch touches CUDA (layout.on_gpu uses it); elsewhere it is absent
    import spaces  # noqa: F401
except ImportError:
    pass

from specdec.ui.launch import parse_options, serve  # noqa: E402


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    serve(parse_options(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
