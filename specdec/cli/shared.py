"""What more than one subcommand uses: the one-line usage error, stderr lines, the model arguments (--target,
--draft, --chat, --device, --dtype, --trust-remote-code), --k's type, and the prompt and the pair they name."""
from __future__ import annotations

import argparse
import sys

from specdec.errors import SpecDecError
from specdec.models import presets
from specdec.planning.choice import AUTO


class UsageError(SpecDecError):
    """A bad argument: main prints it as one line and exits 2."""


def err(message: str) -> None:
    """Progress and figures go to stderr, so stdout carries only the command's result."""
    print(message, file=sys.stderr, flush=True)


def add_model_arguments(parser, default_draft):
    parser.add_argument("--target", default=presets.DEFAULT_TARGET, help="bundled name, hub id or folder")
    parser.add_argument("--draft", default=default_draft,
                        help="drafter: auto (the drafter and K predicted fastest here; generate), prompt-lookup, a "
                             "draft model (bundled name, hub id, folder), a trained head "
                             "(smollm2-135m-eagle, …), or none for the target-only baseline (default: generate, "
                             "the target's preset draft, prompt-lookup for other targets; bench, none)")
    chat = parser.add_mutually_exclusive_group()
    chat.add_argument("--chat", dest="chat", action="store_true", default=True,
                      help="wrap --prompt in the target's chat template where it has one (default)")
    chat.add_argument("--no-chat", dest="chat", action="store_false", help="use --prompt as plain text")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 …")
    parser.add_argument("--dtype", default="auto", help="auto, float32 (the path transformers is compared with), "
                        "bfloat16, float16; q4_1, q8_0: a GGUF-carried model's own blocks (q4_1 as published)")
    parser.add_argument("--trust-remote-code", action="store_true", help="run model code from the hub (off by default)")


def k_value(text: str):
    """--k: an integer, or auto."""
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or auto, got {text!r}") from None


def parse_ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise UsageError(f"--prompt-ids must be comma-separated integers, got {text!r}") from None
    if not ids:
        raise UsageError("--prompt-ids is empty")
    return ids


def wants_draft(args) -> bool:
    return bool(args.draft) and args.draft.strip().lower() != "none"


def load_pair(args):
    """(target, drafter or None)."""
    from functools import partial

    from specdec.models.loading import load_model
    from specdec.planning.run import load_drafter

    load = partial(load_model, trust_remote_code=args.trust_remote_code)
    target = load(args.target, device=args.device, dtype=args.dtype)
    drafter = load_drafter(args.draft.strip(), target, load_model=load) if wants_draft(args) else None
    return target, drafter


def prompt_ids(args, target) -> list[int]:
    from specdec.models.prompting import encode_prompt

    if args.prompt_ids:
        return parse_ids(args.prompt_ids)
    if not args.prompt or not args.prompt.strip():
        raise UsageError("the prompt is empty")
    return encode_prompt(target, args.prompt, chat=args.chat)
