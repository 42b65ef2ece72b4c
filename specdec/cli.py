"""Command line: `python -m specdec generate ...` and `python -m specdec bench ...`.

Bad arguments exit non-zero with one line on stderr, never a traceback."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

import torch
from transformers.utils import logging as transformers_logging

from . import presets
from .errors import SpecDecError
from .events import DecodeSettings
from .sampling import validate


class UsageError(SpecDecError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints usage + message; we want one line
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m specdec", description="SpecDec Lab: speculative decoding engine")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    gen = commands.add_parser("generate", help="generate with speculative decoding (or the target alone)")
    add_model_arguments(gen, default_draft=None)
    prompt = gen.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", help="prompt text")
    prompt.add_argument("--prompt-ids", help="prompt token ids, comma separated (e.g. 1,2,3)")
    gen.add_argument("--max-new-tokens", type=int, default=64)
    gen.add_argument("--k", type=int, default=4, help="draft length")
    gen.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    gen.add_argument("--top-k", type=int, default=None)
    gen.add_argument("--top-p", type=float, default=None)
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--num-samples", type=int, default=1, help="independent samples from one seeded generator")
    gen.add_argument("--json", action="store_true", help="print one JSON object")

    bench = commands.add_parser("bench", help="our baseline and speculative decoding vs transformers, greedy")
    add_model_arguments(bench, default_draft=presets.DEFAULT_DRAFT)
    bench.add_argument("--prompt", default=None, help="prompt text (default: a code prompt)")
    bench.add_argument("--prompt-ids", default=None, help="prompt token ids, comma separated")
    bench.add_argument("--k", type=int, default=4)
    bench.add_argument("--max-new-tokens", type=int, default=128)
    bench.add_argument("--repeats", type=int, default=3)
    bench.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    bench.add_argument("--json-out", default=None, help="also write the JSON report to this file")
    return parser


def add_model_arguments(parser, default_draft):
    parser.add_argument("--target", default=presets.DEFAULT_TARGET, help="bundled name, hub id or folder")
    parser.add_argument("--draft", default=default_draft, help="draft model; omit for the target-only baseline")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 …")
    parser.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    parser.add_argument("--trust-remote-code", action="store_true", help="run model code from the hub (off by default)")


def parse_ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise UsageError(f"--prompt-ids must be comma-separated integers, got {text!r}") from None
    if not ids:
        raise UsageError("--prompt-ids is empty")
    return ids


def load_pair(args):
    from .loading import check_compatible, load_model

    options = dict(device=args.device, dtype=args.dtype, trust_remote_code=args.trust_remote_code)
    target = load_model(args.target, **options)
    draft = load_model(args.draft, **options) if args.draft else None
    if draft is not None:
        check_compatible(target, draft)
    return target, draft


def prompt_ids(args, target) -> list[int]:
    if args.prompt_ids:
        return parse_ids(args.prompt_ids)
    if not args.prompt or not args.prompt.strip():
        raise UsageError("the prompt is empty")
    return target.encode(args.prompt)


def run_generate(args) -> int:
    from .decoding import generate

    if args.num_samples < 1:
        raise UsageError("--num-samples must be at least 1")
    settings = DecodeSettings(args.max_new_tokens, args.k, args.temperature, args.top_k, args.top_p, args.seed)
    validate(settings)  # before loading anything
    target, draft = load_pair(args)
    ids = prompt_ids(args, target)
    generator = torch.Generator(device=target.device).manual_seed(args.seed)
    results = [generate(target, draft, ids, settings, generator=generator) for _ in range(args.num_samples)]
    first = results[0]
    if args.json:
        report = first.to_dict()
        if args.num_samples > 1:
            report["samples"] = [r.token_ids for r in results]
        print(json.dumps(report))
        return 0
    for result in results:
        print(result.text if result.text is not None else " ".join(map(str, result.token_ids)))
    print(format_summary(first.metrics), file=sys.stderr)
    return 0


def format_summary(metrics) -> str:
    rate = "n/a" if metrics.acceptance_rate is None else f"{metrics.acceptance_rate:.2f}"
    return (
        f"{metrics.new_tokens} tokens in {metrics.wall_time_s:.2f} s ({metrics.tokens_per_s:.1f} tok/s); "
        f"acceptance {rate}; {metrics.mean_tokens_per_target_forward:.2f} tokens per target forward"
    )


def run_bench(args) -> int:
    from .bench import format_table, run_benchmark

    if args.draft is None:
        raise UsageError("bench needs --draft")
    if args.threads:
        torch.set_num_threads(args.threads)
    target, draft = load_pair(args)
    if args.prompt_ids:
        ids = parse_ids(args.prompt_ids)
    else:
        ids = target.encode(args.prompt or "def parse_arguments(argv):\n    parser = argparse.ArgumentParser(")
    report = run_benchmark(target, draft, ids, k=args.k, max_new_tokens=args.max_new_tokens, repeats=args.repeats)
    print(format_table(report))
    text = json.dumps(asdict(report))
    print(text)
    if args.json_out:
        with open(args.json_out, "w") as out:
            out.write(text + "\n")
    return 0


def main(argv=None) -> int:
    transformers_logging.disable_progress_bar()  # stderr carries our one-line messages only
    transformers_logging.set_verbosity_error()
    try:
        args = build_parser().parse_args(argv)
        return run_generate(args) if args.command == "generate" else run_bench(args)
    except SpecDecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
