"""Time of one target forward by the number of new tokens it scores (a chain of K scores K + 1; a tree of N
nodes scores N + 1), through the runner the engine uses, after a 200-token prefix.

    python experiments/measure_runner_forward.py [--target smollm2-135m-instruct] [--dtype auto] [--tokens 1,2,5,9,13,17] [--repeats 15]

Prints the median milliseconds per forward and the ratio to a 1-token forward (v(n) of docs/cost_model.md).
"""
from __future__ import annotations

import argparse
import statistics
import time

from specdec.models.loading import load_model
from specdec.runners.threads import threads_for_step

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="smollm2-135m-instruct")
    parser.add_argument("--tokens", default="1,2,5,9,13,17")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--dtype", default="auto")
    args = parser.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    target = load_model(args.target, dtype=args.dtype)
    runner = target.new_runner(target.real_vocab_size, 512)
    runner.prefill(list(range(100, 300)))
    prefix = runner.length
    medians = {}
    for n in (int(t) for t in args.tokens.split(",")):
        times = []
        for _ in range(args.repeats + 1):
            runner.rollback(prefix)
            start = time.perf_counter()
            with threads_for_step(target.device):  # as a decoding step runs it
                runner.forward(list(range(1000, 1000 + n)))
            times.append(time.perf_counter() - start)
        medians[n] = statistics.median(times[1:])  # the first call warms up
        ratio = f"  ({medians[n] / medians[1]:.2f}x one token)" if 1 in medians else ""
        print(f"{n:3d} tokens: {1000 * medians[n]:6.1f} ms{ratio}", flush=True)
    with threads_for_step(target.device):
        threads = torch.get_num_threads()
    print(f"runner: {target.runner_kind}, {target.dtype}, torch {torch.__version__}, {threads} thread(s) per step")


if __name__ == "__main__":
    main()
