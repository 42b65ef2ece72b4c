"""``python -m training build|cards|pins|zoo``.

Run builds as ``OMP_WAIT_POLICY=PASSIVE python -m training build ...``: on a CPU shared with other
work, OpenMP threads that spin at barriers slow training down two to three times (measured here).
The variable must be set before torch is imported, so it belongs on the command line.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def bundled_dir() -> Path:
    from specdec.models.presets import BUNDLED_DIR

    return BUNDLED_DIR


def run_build(args: argparse.Namespace) -> None:
    from training.lab_family.configs import PROFILES
    from training.lab_family.pipeline import build_family

    command = f"python -m training build --profile {args.profile} --seed {args.seed}"
    if os.environ.get("OMP_WAIT_POLICY"):
        command = f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} {command}"
    if args.out is not None:
        command += f" --out {args.out}"
    out = Path(args.out) if args.out is not None else bundled_dir()
    build_family(PROFILES[args.profile], out, seed=args.seed, threads=args.threads, command=command)


def run_cards(args: argparse.Namespace) -> None:
    from training.lab_family.cards import write_all_cards

    folder = Path(args.dir) if args.dir else bundled_dir()
    write_all_cards(folder, prompts_per_kind=args.prompts, max_new_tokens=args.max_new_tokens,
                    docs_path=None if args.no_docs else Path(args.docs))


def run_pins(args: argparse.Namespace) -> None:
    from training.lab_family.measure import greedy_pins

    folder = Path(args.dir) if args.dir else bundled_dir()
    print(json.dumps(greedy_pins(folder), indent=1))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="train the tokenizer, target and drafts; install the folders")
    build.add_argument("--profile", default="full", choices=["full", "smoke", "tiny"])
    build.add_argument("--out", default=None, help="folder for the models (default: assets/models)")
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--threads", type=int, default=2)
    build.set_defaults(func=run_build)
    cards = sub.add_parser("cards", help="write README.md model cards from the shipped weights")
    cards.add_argument("--dir", default=None)
    cards.add_argument("--prompts", type=int, default=8, help="prompts per kind (code, prose)")
    cards.add_argument("--max-new-tokens", type=int, default=96)
    cards.add_argument("--docs", default="docs/models.md")
    cards.add_argument("--no-docs", action="store_true")
    cards.set_defaults(func=run_cards)
    pins = sub.add_parser("pins", help="print the pinned greedy continuations for the tests")
    pins.add_argument("--dir", default=None)
    pins.set_defaults(func=run_pins)
    from training.zoo.cli import add_parser as add_zoo_parser

    add_zoo_parser(sub)  # the SmolLM2-135M drafter zoo (training/zoo/)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
