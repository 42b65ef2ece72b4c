"""Command line: `python -m specdec generate ...`, `bench ...`, `tune ...` (tuning.py) and `fetch ...`.

Bad arguments exit non-zero with one line on stderr, never a traceback."""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from specdec.engine.events import DecodeSettings
from specdec.engine.metrics import memory_summary
from specdec.engine.sampling import validate
from specdec.engine.schedules import SCHEDULES
from specdec.errors import SpecDecError, first_line, is_out_of_memory
from specdec.models import presets
from specdec.planning.choice import AUTO, AUTO_K_MAX, k_and_schedule
from specdec.serving.limits import (
    K_MAX,
    NUM_SAMPLES_MAX,
    SEED_MAX,
    TEMPERATURE_MAX,
    check_finite,
    check_integer,
    check_model_name,
    check_prompt_text,
)

import torch
from transformers.utils import logging as transformers_logging


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
    gen.add_argument("--k", type=k_value, default=4, help="draft length (the largest, for adaptive schedules); "
                     f"auto: the auto schedule, K up to {AUTO_K_MAX}, speculation off where it does not pay")
    gen.add_argument("--k-schedule", default="constant", choices=SCHEDULES, help="how K may change per step")
    gen.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    gen.add_argument("--top-k", type=int, default=None)
    gen.add_argument("--top-p", type=float, default=None)
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--num-samples", type=int, default=1, help="independent samples from one seeded generator")
    gen.add_argument("--json", action="store_true", help="print one JSON object")
    from specdec.cli.vllm import add_engine_arguments, add_vllm_parser

    add_engine_arguments(gen)

    bench = commands.add_parser("bench", help="ours vs transformers, greedy: target only (no --draft), "
                                "prompt-lookup, or a draft model")
    add_model_arguments(bench, default_draft=None)
    bench.add_argument("--prompt", default=None, help="prompt text (default: a code prompt)")
    bench.add_argument("--prompt-ids", default=None, help="prompt token ids, comma separated")
    bench.add_argument("--k", type=k_value, default=None, help="draft length (default 4); with --suite, auto "
                       "(the default there): each drafter at its auto K")
    bench.add_argument("--max-new-tokens", type=int, default=128)
    bench.add_argument("--repeats", type=int, default=6, help="rounds of every engine (6+ for a 95%% interval)")
    bench.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    bench.add_argument("--json-out", default=None, help="also write the JSON report to this file")
    bench.add_argument("--suite", action="store_true", help="this machine's benchmark table: target-only vs "
                       "transformers, every zoo drafter vs target-only (specdec/measure/bench_suite.py)")

    from specdec.cli.tune import add_tune_arguments

    add_tune_arguments(commands.add_parser("tune", help="show (--refresh: measure again) the fastest exact path "
                                           "`auto` chose for a model on this machine"))

    fetch = commands.add_parser("fetch", help="download and convert a fetchable model into the model cache")
    fetch.add_argument("name", help="smollm2-135m-instruct")

    from specdec.serving.space_deploy import add_deploy_parser
    add_deploy_parser(commands)
    add_vllm_parser(commands)
    return parser


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
    parser.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    parser.add_argument("--trust-remote-code", action="store_true", help="run model code from the hub (off by default)")


def k_value(text: str):
    """--k: an integer, or auto."""
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or auto, got {text!r}") from None


def auto_k(args) -> tuple[int, str]:
    """(K, K schedule): --k auto means the auto schedule up to AUTO_K_MAX; --draft auto runs the auto schedule
    at any K (K is then its largest)."""
    k, schedule = k_and_schedule(args.k, args.k_schedule)
    return k, AUTO if args.draft.strip().lower() == AUTO else schedule


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

    from specdec.drafters.registry import load_drafter
    from specdec.models.loading import load_model

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


def run_generate(args) -> int:
    from specdec.engine.decoding import generate

    if args.draft is None:  # the target's default (presets.default_draft)
        args.draft = presets.default_draft(args.target)
    check_generate_args(args)
    k, schedule = auto_k(args)
    settings = DecodeSettings(args.max_new_tokens, k, args.temperature, args.top_k, args.top_p, args.seed,
                              k_schedule=schedule)
    validate(settings)  # before loading anything
    if args.engine == "vllm":  # a running vLLM server (specdec/vllm/, docs/vllm.md)
        from specdec.cli.vllm import run_generate_vllm
        return run_generate_vllm(args, settings, parse_ids)
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
    if first.auto is not None:
        print(first.auto["why"], file=sys.stderr)
    print(format_summary(first.metrics), file=sys.stderr)
    print(memory_summary(first.metrics.memory), file=sys.stderr)
    return 0


def check_generate_args(args) -> None:
    """Numbers finite and in range, names and prompt valid text: checked before anything loads."""
    check_integer("--max-new-tokens", args.max_new_tokens, 1)
    if args.k != AUTO:
        check_integer("--k", args.k, 1, K_MAX)
    check_finite("--temperature", args.temperature, 0, TEMPERATURE_MAX)
    if args.top_p is not None:
        check_finite("--top-p", args.top_p, 0, 1)
    if args.top_k is not None:
        check_integer("--top-k", args.top_k, 0)
    check_integer("--seed", args.seed, 0, SEED_MAX)
    check_integer("--num-samples", args.num_samples, 1, NUM_SAMPLES_MAX)
    check_model_name(args.target, "--target")
    check_model_name(args.draft, "--draft")
    if args.prompt is not None:
        check_prompt_text(args.prompt, what="--prompt")


def format_summary(metrics) -> str:
    rate = "n/a" if metrics.acceptance_rate is None else f"{metrics.acceptance_rate:.2f}"
    return (
        f"{metrics.new_tokens} tokens in {metrics.wall_time_s:.2f} s ({metrics.tokens_per_s:.1f} tok/s); "
        f"acceptance {rate}; {metrics.tokens_per_forward or 0:.2f} tokens per target forward"
    )


BENCH_PROMPT = "def parse_arguments(argv):\n    parser = argparse.ArgumentParser("  # code (chat-wrapped where the target has a template)


def run_bench(args) -> int:
    from specdec.measure.bench import format_table, run_benchmark

    if args.threads:  # explicit: wins over the measured count (threads.py)
        from specdec.runners.threads import set_explicit_threads

        torch.set_num_threads(args.threads)
        set_explicit_threads(args.threads)
    if args.suite:
        from specdec.measure.bench_suite import run_suite

        args.k = AUTO if args.k is None else args.k
        return run_suite(args, prompt_ids)
    if args.k == AUTO:
        raise UsageError("bench compares with transformers at one K: give --k an integer (--k auto is --suite's)")
    args.k = 4 if args.k is None else args.k
    check_integer("--k", args.k, 1, K_MAX)
    target, draft = load_pair(args)
    args.prompt = args.prompt or BENCH_PROMPT
    ids = prompt_ids(args, target)
    report = run_benchmark(target, draft, ids, k=args.k, max_new_tokens=args.max_new_tokens, repeats=args.repeats)
    print(format_table(report))
    text = json.dumps(asdict(report))
    print(text)
    if args.json_out:
        with open(args.json_out, "w") as out:
            out.write(text + "\n")
    return 0


def run_fetch(args) -> int:
    """Prints the model's folder on stdout; progress goes to stderr. Idempotent."""
    from specdec.models.fetch import KNOWN_SOURCES, fetch_folder, is_fetchable

    if not is_fetchable(args.name):
        raise UsageError(f"{args.name!r} is not fetchable; known: {', '.join(sorted(KNOWN_SOURCES))}")
    print(fetch_folder(args.name, progress=lambda message: print(message, file=sys.stderr, flush=True)))
    return 0


def run_tune(args) -> int:
    from specdec.cli.tune import run_tune as tune

    return tune(args, out=print, err=lambda message: print(message, file=sys.stderr, flush=True))


def main(argv=None) -> int:
    transformers_logging.disable_progress_bar()  # stderr carries our one-line messages only
    transformers_logging.set_verbosity_error()
    try:
        args = build_parser().parse_args(argv)
        commands = {"generate": run_generate, "bench": run_bench, "fetch": run_fetch, "tune": run_tune}
        if args.command == "deploy":
            from specdec.serving.space_deploy import run_deploy
            return run_deploy(args)
        if args.command == "vllm":
            from specdec.cli.vllm import run_vllm
            return run_vllm(args)
        return commands[args.command](args)
    except SpecDecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 (a bug or an exhausted machine: still one line; SPECDEC_DEBUG=1 shows it)
        if os.environ.get("SPECDEC_DEBUG"):
            raise
        print(f"error: {describe_unexpected(exc)}", file=sys.stderr)
        return 2 if is_out_of_memory(exc) else 1


def describe_unexpected(exc: BaseException) -> str:
    if is_out_of_memory(exc):
        return "out of memory: lower --max-new-tokens or --k, or use a smaller model or dtype"
    return f"unexpected {type(exc).__name__}: {first_line(exc)} (run with SPECDEC_DEBUG=1 for the traceback)"
