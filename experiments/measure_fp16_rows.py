"""Which row counts FBGEMM's float16-weight product computes differently, and what making them agree would cost.

    python experiments/measure_fp16_rows.py [--max-rows 64] [--pairs 41]

1. For 1 .. max-rows rows of heavy-tailed activations through the float16 copy of a SmolLM2-shaped matrix: the
   row counts whose rows differ (in any bit) from the same rows multiplied three at a time. None on FBGEMM's
   AVX-512 kernels; on its AVX2 ones 1, 2, 7, 14, 31, 32, ... (packed_weights.float16_rows_exact()).
2. Interleaved one-token forwards of the target through the engine's runner, as is and with every 1- or 2-row
   float16 product padded with zero rows to 3 (which makes them agree with larger calls): median ms and the
   median ratio of paired calls.
"""
from __future__ import annotations

import argparse
import statistics
import time

from specdec.models.loading import load_model
from specdec.runners import packed_weights
from specdec.runners import static as static_runner

import torch


def padded_linear(hidden: torch.Tensor, weights) -> torch.Tensor:
    rows = hidden.shape[-2]
    if isinstance(weights, packed_weights.Fp16Linear) and rows < 3:
        zeros = hidden.new_zeros(hidden.shape[:-2] + (3 - rows, hidden.shape[-1]))
        return packed_weights.linear(torch.cat([hidden, zeros], dim=-2), weights)[..., :rows, :]
    return packed_weights.linear(hidden, weights)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-rows", type=int, default=64)
    parser.add_argument("--pairs", type=int, default=41)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as a decoding step runs (threads.py)
    print(f"float16_rows_exact(): {packed_weights.float16_rows_exact()}; CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    differing = packed_weights.float16_row_counts_that_differ(args.max_rows, (1536, 576))  # SmolLM2's gate / up
    print(f"row counts that differ from three at a time: {differing or 'none'}", flush=True)
    target = load_model("smollm2-135m-instruct", dtype="float32")
    runner = target.new_runner(target.real_vocab_size, 512)
    runner.prefill(list(range(100, 300)))
    prefix, plain = runner.length, static_runner.linear
    times = {"as is": [], "padded to 3": []}
    for pair in range(args.pairs + 1):
        for mode in (("as is", "padded to 3") if pair % 2 else ("padded to 3", "as is")):
            static_runner.linear = padded_linear if mode == "padded to 3" else plain
            runner.rollback(prefix)
            start = time.perf_counter()
            runner.forward([1000])
            times[mode].append(time.perf_counter() - start)
    static_runner.linear = plain
    ratios = [a / b for a, b in zip(times["padded to 3"][1:], times["as is"][1:])]  # the first pair warms up
    print(f"one-token forward: as is {1e3 * statistics.median(times['as is'][1:]):.1f} ms, padded to 3 "
          f"{1e3 * statistics.median(times['padded to 3'][1:]):.1f} ms, paired ratio {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
