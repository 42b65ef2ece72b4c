"""`python -m specdec generate`: one generation (or --num-samples draws) with speculative decoding or the target
alone, printed as text with its figures on stderr, or as one JSON object (--json). --prompts-file runs a file's
prompts in order in one process with one drafter (a drafter that learns across requests, `suffix`, shows it): one
JSON object per prompt, one a line. --engine vllm runs it on a vLLM server instead (vllm.py)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specdec.cli.shared import UsageError, add_model_arguments, k_value, load_pair, prompt_ids
from specdec.cli.vllm import add_engine_arguments, run_generate_vllm
from specdec.engine.events import DecodeSettings, check_settings
from specdec.engine.metrics import memory_summary
from specdec.engine.schedules import SCHEDULES
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


def add_parser(commands) -> None:
    gen = commands.add_parser("generate", help="generate with speculative decoding (or the target alone)")
    add_model_arguments(gen, default_draft=None)
    prompt = gen.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", help="prompt text")
    prompt.add_argument("--prompt-ids", help="prompt token ids, comma separated (e.g. 1,2,3)")
    prompt.add_argument("--prompts-file", help="a file of prompts run in order by one drafter: one a line, or a JSON "
                        "list of strings; --json prints one object per prompt, one a line")
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
    add_engine_arguments(gen)


def run(args) -> int:
    from specdec.measure.speedup import drafter_for_each_run
    from specdec.planning.run import generate

    if args.draft is None:  # the target's default (presets.default_draft)
        args.draft = presets.default_draft(args.target)
    check_generate_args(args)
    k, schedule = auto_k(args)
    settings = DecodeSettings(args.max_new_tokens, k, args.temperature, args.top_k, args.top_p, args.seed,
                              k_schedule=schedule)
    check_settings(settings)  # before loading anything
    if args.engine == "vllm" and args.prompts_file:
        raise UsageError("--prompts-file runs on the lab engine (--engine lab)")
    if args.engine == "vllm":  # a running vLLM server (specdec/vllm/, docs/vllm.md)
        return run_generate_vllm(args, settings)
    prompts = read_prompts(args.prompts_file) if args.prompts_file else [args.prompt]
    target, draft = load_pair(args)
    generator = torch.Generator(device=target.device).manual_seed(args.seed)
    for index, text in enumerate(prompts):
        ids = prompt_ids(argparse.Namespace(**{**vars(args), "prompt": text}), target)
        # the first run is the request; further samples of a drafter that learns across requests replay what it had
        # learnt before it, so every sample is a draw of the same request (measure.speedup.drafter_for_each_run)
        again = drafter_for_each_run(draft)
        results = [generate(target, draft if n == 0 else again(), ids, settings, generator=generator)
                   for n in range(args.num_samples)]
        print_results(args, results, index if args.prompts_file else None)
    return 0


def print_results(args, results, request) -> None:
    """One prompt's results: one JSON object (--json; `request`: its place in --prompts-file, from 0), else the
    texts on stdout and the figures on stderr."""
    first = results[0]
    if args.json:
        report = first.to_dict()
        if args.num_samples > 1:
            report["samples"] = [r.token_ids for r in results]
        if request is not None:
            report = {"request": request, "tokens_per_forward": first.metrics.tokens_per_forward, **report}
        print(json.dumps(report), flush=True)
        return
    for result in results:
        print(result.text if result.text is not None else " ".join(map(str, result.token_ids)))
    if first.auto is not None:
        print(first.auto["why"], file=sys.stderr)
    print(format_summary(first.metrics), file=sys.stderr)
    print(memory_summary(first.metrics.memory), file=sys.stderr)


def read_prompts(path: str) -> list[str]:
    """The prompts of a --prompts-file: a JSON list of strings, else its non-blank lines; each checked as --prompt."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise UsageError(f"--prompts-file: cannot read {path}: {error.strerror or error}") from None
    try:
        prompts = json.loads(text) if text.lstrip().startswith("[") else None
    except ValueError:
        prompts = None
    if prompts is None:
        prompts = [line for line in text.splitlines() if line.strip()]
    if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts) or not prompts:
        raise UsageError(f"--prompts-file {path} holds no prompts: give one a line, or a JSON list of strings")
    for number, prompt in enumerate(prompts, 1):
        check_prompt_text(prompt, what=f"--prompts-file prompt {number}")
    return prompts


def auto_k(args) -> tuple[int, str]:
    """(K, K schedule): --k auto means the auto schedule up to AUTO_K_MAX; --draft auto runs the auto schedule
    at any K (K is then its largest)."""
    k, schedule = k_and_schedule(args.k, args.k_schedule)
    return k, AUTO if args.draft.strip().lower() == AUTO else schedule


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
