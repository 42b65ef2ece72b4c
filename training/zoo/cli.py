"""The ``zoo`` subcommand of ``python -m training`` (see pipeline.py and cards.py)."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch


def add_parser(sub) -> None:
    from training.zoo.pipeline import PROFILES

    zoo = sub.add_parser("zoo", help="build the SmolLM2-135M drafter zoo (data, training, cards)")
    zoo.add_argument("--stage", default="all", choices=["all", "data", "train", "cards"],
                     help="all = data + train + cards; data shards in --work are reused when present")
    zoo.add_argument("--profile", default="bf16",
                     choices=list(PROFILES),
                     help="bf16: the shipped recipe of the EAGLE head, Medusa, the early exit and the draft model "
                          "(CPUs with native bfloat16); eagle3-asked, then eagle3-asked-more: the shipped EAGLE-3 "
                          "head's two stages (the second from the first's weights in <work>/init); tiny, tiny-eagle3: "
                          "seconds, for tests (docs/zoo.md, \"Building\")")
    zoo.add_argument("--seed", type=int, default=0)
    zoo.add_argument("--out", default=None, help="folder for the drafters (default: assets/drafters)")
    zoo.add_argument("--work", default=None, help="data shards and logs (default: ~/.cache/specdec/zoo-work/<profile>)")
    zoo.add_argument("--only", default=None, help="comma-separated drafter names to train (default: the profile's) "
                                                  "and, with --stage cards, to measure (with their tree drafts)")
    zoo.add_argument("--threads", type=int, default=2)
    zoo.add_argument("--epochs", type=int, default=None,
                     help="train: every drafter's epochs instead of the profile's (an experiment; recorded in zoo.json)")
    zoo.add_argument("--prompts-per-kind", type=int, default=None, help="cards: held-out prompts per kind "
                                                                         "(default: cards.PROMPTS_PER_KIND)")
    zoo.set_defaults(func=run)


def command_line(args) -> str:
    parts = ["python -m training zoo", f"--stage {args.stage}", f"--profile {args.profile}", f"--seed {args.seed}"]
    if args.out:
        parts.append(f"--out {args.out}")
    if args.work:
        parts.append(f"--work {args.work}")
    if args.only:
        parts.append(f"--only {args.only}")
    if args.epochs:
        parts.append(f"--epochs {args.epochs}")
    command = " ".join(parts)
    if os.environ.get("OMP_WAIT_POLICY"):
        command = f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} {command}"
    return command


def profile_of(args: argparse.Namespace):
    """The named profile, with --epochs applied to each drafter's recipe."""
    from dataclasses import fields, replace

    from training.zoo.pipeline import PROFILES
    from training.zoo.train import TrainConfig

    profile = PROFILES[args.profile]
    if not args.epochs:
        return profile
    recipes = {f.name: replace(getattr(profile, f.name), epochs=args.epochs)
               for f in fields(profile) if isinstance(getattr(profile, f.name), TrainConfig)}
    return replace(profile, **recipes)


def run(args: argparse.Namespace) -> None:
    from specdec.drafters.shipped import ASSETS

    from training.zoo.pipeline import build_zoo, default_work, load_target_for_training

    torch.set_num_threads(args.threads)
    out = Path(args.out) if args.out else ASSETS
    work = Path(args.work) if args.work else default_work(args.profile)
    log = lambda s: print(s, flush=True)  # noqa: E731
    if args.stage != "cards":
        profile = profile_of(args)
        model, tokenizer, folder = load_target_for_training(profile.dtype)
        only = tuple(args.only.split(",")) if args.only else None
        summary = build_zoo(model, tokenizer, out, work, profile, seed=args.seed,
                            command=command_line(args), stage=args.stage if args.stage != "all" else "all",
                            only=only, log=log)
        log(json.dumps({k: v for k, v in summary.items() if k != "drafters"}, indent=1))
        del model
    if args.stage in ("all", "cards"):
        from training.zoo.cards import PROMPTS_PER_KIND, write_cards

        write_cards(out, prompts_per_kind=args.prompts_per_kind or PROMPTS_PER_KIND, only=tuple(args.only.split(",")) if args.only else None,
                    log=log)
