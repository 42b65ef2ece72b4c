"""SpecDec Lab web app: `python app.py` serves on http://127.0.0.1:7860 (see --help).

Flags: --host, --port, --share (or SPECDEC_HOST, SPECDEC_PORT, SPECDEC_SHARE). On a Hugging Face
Space this file is the app_file; the defaults then follow the Space's GRADIO_SERVER_NAME/PORT.
"""
import logging
import sys

# Importing specdec first runs the process-wide set-up (specdec/process.py: the OpenMP wait policy, before torch
# starts its thread pool), the same as `python -m specdec` and the scripts get.
from specdec.ui.launch import parse_options, serve


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    serve(parse_options(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
