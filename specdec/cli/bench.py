"""`python -m specdec bench`: this engine against transformers, greedy, at one K (target only, or one drafter);
--suite: this machine's benchmark table (specdec/measure/bench_suite.py); --vs llama.cpp: llama.cpp side by side
(cli/versus.py). A table, then the JSON report."""
from __future__ import annotations

import json
from dataclasses import asdict

from specdec.cli import versus
from specdec.cli.shared import UsageError, add_model_arguments, k_value, load_pair, prompt_ids
from specdec.planning.choice import AUTO
from specdec.serving.limits import K_MAX, check_integer

import torch

BENCH_PROMPT = "def parse_arguments(argv):\n    parser = argparse.ArgumentParser("  # code (chat-wrapped where the target has a template)


def add_parser(commands) -> None:
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
    versus.add_arguments(bench)


def run(args) -> int:
    from specdec.measure.bench import format_table, run_benchmark

    if args.threads:  # explicit: wins over the measured count (threads.py)
        from specdec.runners.threads import set_explicit_threads

        torch.set_num_threads(args.threads)
        set_explicit_threads(args.threads)
    if args.vs:
        args.prompt = args.prompt or BENCH_PROMPT
        return versus.run_versus(args)
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
