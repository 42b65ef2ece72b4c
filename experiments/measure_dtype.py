"""float32 vs bfloat16 decoding speed on this CPU, batch 1, greedy: our engine's target-only decode
(`specdec.generate(target, None, ids, ...)`, the static runner for Llama models) and transformers
`generate`, runs interleaved (fp32 and bf16 alternate within every repeat), medians reported.
This is what `dtype="auto"` on a CPU is decided from (specdec.models.loading.resolve_dtype, docs/models.md).

    OMP_WAIT_POLICY=PASSIVE python experiments/measure_dtype.py [--model smollm2-135m-instruct] \
        [--tokens 64] [--repeats 5] [--threads N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from specdec import DecodeSettings, generate, load_model
from specdec.models.loading import parameter_count
from specdec.runners.packed_weights import cpu_has_amx_bf16, cpu_has_native_bf16

import torch

PROMPT = "Explain photosynthesis in simple terms."
DTYPES = ("float32", "bfloat16")


def prompt_ids(model, text: str) -> list[int]:
    if getattr(model.tokenizer, "chat_template", None):
        encoded = model.tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                                      add_generation_prompt=True, tokenize=True)
        return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)
    return model.encode(text)


def time_ours(model, ids, tokens) -> tuple[float, int]:
    start = time.perf_counter()
    result = generate(model, None, ids, DecodeSettings(max_new_tokens=tokens))
    return time.perf_counter() - start, len(result.token_ids)


def time_transformers(model, ids, tokens) -> tuple[float, int]:
    inputs = torch.tensor([ids], device=model.device)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.model.generate(inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=tokens,
                                   do_sample=False, eos_token_id=list(model.eos_token_ids) or None)
    return time.perf_counter() - start, out.shape[1] - len(ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    models = {dtype: load_model(args.model, device="cpu", dtype=dtype) for dtype in DTYPES}
    ids = prompt_ids(models["float32"], PROMPT)
    engines = {"ours: target only": time_ours, "transformers: generate": time_transformers}
    for model in models.values():  # warm-up, untimed
        for run in engines.values():
            run(model, ids, 4)
    samples = {(engine, dtype): [] for engine in engines for dtype in DTYPES}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeats):
        for engine, run in engines.items():
            for dtype, model in models.items():
                seconds, count = run(model, ids, args.tokens)
                samples[engine, dtype].append(count / seconds)
    report = {
        "model": args.model, "parameters": parameter_count(models["float32"].source), "tokens": args.tokens,
        "repeats": args.repeats, "threads": torch.get_num_threads(), "prompt_tokens": len(ids),
        "cpu_native_bf16": cpu_has_native_bf16(), "cpu_amx_bf16": cpu_has_amx_bf16(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "tokens_per_s": {f"{engine} / {dtype}": round(statistics.median(values), 2)
                         for (engine, dtype), values in samples.items()},
        "bf16_over_fp32": {engine: round(statistics.median(samples[engine, "bfloat16"])
                                         / statistics.median(samples[engine, "float32"]), 3) for engine in engines},
    }
    for key, value in report["tokens_per_s"].items():
        print(f"{key:40s} {value:8.2f} tok/s")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
