"""`python -m specdec fetch NAME`: download and convert a fetchable model into the model cache
(specdec/models/fetch.py); prints its folder on stdout, progress on stderr. Idempotent."""
from __future__ import annotations

from specdec.cli.shared import UsageError, err


def add_parser(commands) -> None:
    fetch = commands.add_parser("fetch", help="download and convert a fetchable model into the model cache")
    fetch.add_argument("name", help="smollm2-135m-instruct")


def run(args) -> int:
    from specdec.models.fetch import KNOWN_SOURCES, fetch_folder, is_fetchable

    if not is_fetchable(args.name):
        raise UsageError(f"{args.name!r} is not fetchable; known: {', '.join(sorted(KNOWN_SOURCES))}")
    print(fetch_folder(args.name, progress=err))
    return 0
