"""Time SmolLM2-135M-shaped linear layers with float32 weights (F.linear, MKL) against the static runner's
float16 weight copies (specdec/runners/packed_weights.py), over 1 to 8 rows, and the output head alone.

    OMP_WAIT_POLICY=PASSIVE python experiments/measure_fp16_weights.py

All 30 layers' matrices are distinct (426 MB in float32, beyond the caches), so each product streams its
weights from memory as decoding does. Median of 7 passes per row count; both paths in the same run."""
from __future__ import annotations

import statistics
import sys
import time

from specdec.measure.device_presets import LAYER_SHAPES
from specdec.runners.packed_weights import Fp16Linear, fp16_available, linear, weights_for

import torch
import torch.nn.functional as F

LAYERS, HEAD, ROWS = 30, (49152, 576), (1, 2, 3, 5, 8)


def median_ms(fn, passes: int = 7) -> float:
    fn()
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    if not fp16_available():
        sys.exit("float16 weight copies are not available here (no FBGEMM, or SPECDEC_PACKED_WEIGHTS=0)")
    torch.manual_seed(0)
    plain = [torch.randn(*shape).div(30).half().float() for _ in range(LAYERS) for shape in LAYER_SHAPES]
    copies = [weights_for(w) for w in plain]
    head = torch.randn(*HEAD).div(30).half().float()
    head_copy = weights_for(head)
    assert all(isinstance(c, Fp16Linear) for c in copies + [head_copy])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {LAYERS} layers of {LAYER_SHAPES}")
    print("rows  layers float32 ms  layers float16 copies ms  ratio  head float32 ms  head copies ms")
    for rows in ROWS:
        inputs = {n: torch.randn(1, rows, n) for n in {s[1] for s in LAYER_SHAPES} | {HEAD[1]}}
        a = median_ms(lambda: [F.linear(inputs[w.shape[1]], w) for w in plain])
        b = median_ms(lambda: [linear(inputs[w.shape[1]], c) for w, c in zip(plain, copies)])
        h_a = median_ms(lambda: F.linear(inputs[HEAD[1]], head))
        h_b = median_ms(lambda: linear(inputs[HEAD[1]], head_copy))
        print(f"{rows:4d}  {a:18.1f}  {b:24.1f}  {a / b:5.2f}  {h_a:15.1f}  {h_b:14.1f}")


if __name__ == "__main__":
    main()
