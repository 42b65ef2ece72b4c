"""Time of one target forward by the number of new tokens it scores (a chain of K scores K + 1; a tree of N
nodes scores N + 1), through the runner the engine uses, after a 200-token prefix, beside its roofline.

    python experiments/measure_runner_forward.py [--target smollm2-135m-instruct] [--dtype auto] [--tokens 1,2,5,9,13,17] [--repeats 15] [--between-mb 64]

--between-mb N reads N MB of other memory before each timed forward, as a speculative step's drafting does between
two target forwards: back to back (the default, 0), a small model's weights stay partly in a large L3 cache (300 MiB on
the AMX Xeon) and the one-token forward runs faster than the memory allows; in a speculative step they come back from
memory, and the ratios change (docs/benchmarks.md).

The row counts take turns within each repeat (a drift in the machine's speed meets them all alike). Prints, per
row count: the median milliseconds per forward with the spread of the repeats (min-max), the ratio to
a 1-token forward (v(n) of docs/cost_model.md), the thread count the forward ran on, and its roofline: the time to
read the bytes a forward reads (the weights once, the cache's keys and values) at this machine's measured memory
read bandwidth, the time of its multiply-adds at this machine's measured float32 GEMM rate (torch, on the same
thread count), and the floor, the larger of the two. Both rates are measured here first (a sum over a large
tensor; a 2048^3 matrix product), on 1 and 2 threads.
"""
from __future__ import annotations

import argparse
import statistics
import time

from specdec.models.loading import load_model
from specdec.runners import lab_kernels, packed_weights
from specdec.runners.threads import model_threads, step_threads, threads_for_step

import torch

PREFIX = 200
BANDWIDTH_BYTES = 1 << 30  # a tensor far larger than the caches, so the sum streams it from memory
GEMM_SIZE = 2048


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine_rates(counts: list[int]) -> dict:
    """{threads: (memory read GB/s, float32 GEMM GFLOP/s)} measured with torch on each thread count."""
    before = torch.get_num_threads()
    data = torch.ones(BANDWIDTH_BYTES // 4)
    a, b = torch.randn(GEMM_SIZE, GEMM_SIZE), torch.randn(GEMM_SIZE, GEMM_SIZE)
    rates = {}
    try:
        for count in counts:
            torch.set_num_threads(count)
            read_s = median_time(lambda: data.sum(), 5)
            gemm_s = median_time(lambda: torch.mm(a, b), 5)
            rates[count] = (BANDWIDTH_BYTES / read_s / 1e9, 2 * GEMM_SIZE ** 3 / gemm_s / 1e9)
    finally:
        torch.set_num_threads(before)
    return rates


def forward_cost(target, n: int) -> tuple[float, float]:
    """(bytes read, floating-point operations) of one n-token forward after PREFIX tokens: every weight matrix read
    once (as the runner stores it), the cache's keys and values read once, 2 FLOPs per multiply-add of the
    products and of attention's two products."""
    model, config = target.model, target.model.config
    matrices = [p for name, p in model.named_parameters() if p.dim() == 2 and "embed_tokens" not in name]
    if model.lm_head.weight is model.model.embed_tokens.weight:  # tied: the head reads the embedding matrix
        matrices.append(model.lm_head.weight)
    weight_elements = sum(p.numel() for p in matrices)
    if target.kernels == "lab":
        weight_bytes = lab_kernels.packed_model(model).nbytes  # float16 copies
    else:  # the packed copies where the runner made them (float16 or bfloat16), else the matrices as stored
        weight_bytes = packed_weights.copy_bytes(model) or sum(p.numel() * p.element_size() for p in matrices)
    heads = config.num_attention_heads
    kv_heads = config.num_key_value_heads or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    layers, seen = config.num_hidden_layers, PREFIX + n
    cache_bytes = 2 * layers * kv_heads * seen * head_dim * 4  # float32 keys and values
    flops = 2 * n * weight_elements + 4 * layers * heads * head_dim * n * seen
    return weight_bytes + cache_bytes, flops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="smollm2-135m-instruct")
    parser.add_argument("--tokens", default="1,2,5,9,13,17")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--between-mb", type=int, default=0, help="MB of other memory read before each forward")
    args = parser.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    counts = sorted({1, torch.get_num_threads()})
    rates = machine_rates(counts)
    for count, (bandwidth, gemm) in rates.items():
        print(f"machine, {count} thread(s): memory read {bandwidth:.1f} GB/s, float32 GEMM {gemm:.0f} GFLOP/s "
              f"(torch {GEMM_SIZE}^3)", flush=True)
    target = load_model(args.target, dtype=args.dtype)
    runner = target.new_runner(target.real_vocab_size, 512)
    runner.prefill(list(range(100, 100 + PREFIX)))
    prefix = runner.length
    between = torch.ones(args.between_mb * 2 ** 20 // 4) if args.between_mb else None
    counts = [int(t) for t in args.tokens.split(",")]
    times = {n: [] for n in counts}
    for repeat in range(args.repeats + 1):  # the row counts interleaved, so a drift in the machine's speed meets all
        for n in counts:
            runner.rollback(prefix)
            if between is not None:
                between.sum()  # another model's weights through the caches, as drafting between two forwards
            start = time.perf_counter()
            with threads_for_step(target.device):  # as a decoding step runs it
                runner.forward(list(range(1000, 1000 + n)))
            if repeat:  # the first round warms up
                times[n].append(time.perf_counter() - start)
    medians = {n: statistics.median(times[n]) for n in counts}
    print("tokens  median ms  (min-max)      ratio  threads  | bandwidth ms  compute ms  floor ms  median/floor")
    for n in counts:
        ratio = f"{medians[n] / medians[1]:.2f}x" if 1 in medians else "  -  "
        count = model_threads(target.model, n) or step_threads(target.device) or torch.get_num_threads()
        bandwidth, gemm = rates.get(count, rates[max(rates)])
        read, flops = forward_cost(target, n)
        bandwidth_ms, compute_ms = read / bandwidth / 1e6, flops / gemm / 1e6
        floor = max(bandwidth_ms, compute_ms)
        print(f"{n:6d}  {1000 * medians[n]:9.1f}  ({1000 * min(times[n]):5.1f}-{1000 * max(times[n]):5.1f})  {ratio:>6}"
              f"  {count:7d}  | {bandwidth_ms:12.1f}  {compute_ms:10.1f}  {floor:8.1f}"
              f"  {1000 * medians[n] / floor:12.2f}", flush=True)
    print(f"runner: {target.runner_kind}, {target.dtype}, torch {torch.__version__}; the thread count per row count "
          f"is the forward's own (the measured choice per row count, else the step's); "
          f"{args.between_mb} MB of other memory read before each forward")


if __name__ == "__main__":
    main()
