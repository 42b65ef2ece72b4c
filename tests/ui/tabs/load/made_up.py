"""A made-up load measurement in the shape `python -m specdec load --json` prints and load_shipped.combine gathers:
the Under load tab's tests draw it without a server. Its figures are invented (a crossover at 8 for ngram, none for
draft_model); the shape is the real one."""
from __future__ import annotations

import copy

from specdec.vllm.load_report import crossover

CONCURRENCIES = (1, 2, 4, 8, 16, 32)
NGRAM_SPEEDUPS = {1: (1.30, 1.20, 1.40), 2: (1.20, 1.10, 1.30), 4: (1.05, 0.98, 1.12), 8: (0.90, 0.85, 0.95),
                  16: (0.80, 0.75, 0.86), 32: (0.70, 0.66, 0.74)}
DRAFT_SPEEDUPS = {c: (1.5 - 0.01 * c, 1.2, 1.9) for c in CONCURRENCIES}


def server(method, k, url):
    speculative = method is not None
    return {"url": url, "model": "smollm2-135m-instruct", "root": "/cache/smollm2-135m-instruct", "version": "0.32.0",
            "speculative": speculative, "k": k, "method": method,
            "draft": "/cache/vllm-export/smollm2-135m-draft" if method == "draft_model" else None, "dtype": "float32",
            "description": f"{method or 'no speculation'}"}


def sample(concurrency, prompt=0):
    # prefill token, then steps accepting 2 of 3, 0 of 3, 3 of 3 drafts: 1 + 3 + 1 + 4 = 9 tokens
    return {"concurrency": concurrency, "prompt": prompt, "token_ids": list(range(100, 109)),
            "token_texts": ["The", " tide", " rises", " and", " falls", " twice", " a", " day", "."],
            "chunk_sizes": [1, 3, 1, 4], "chunk_times": [0.05, 0.08, 0.11, 0.14], "per_step_accepted": [2, 0, 3],
            "per_step_drafted": [3, 3, 3], "finish_reason": "length"}


def run(method="ngram", k=4, speedups=NGRAM_SPEEDUPS, same_text=True):
    rows, entries = [], []
    for c in CONCURRENCIES:
        median, low, high = speedups[c]
        base = 60.0 * c ** 0.8
        for engine, tok_s in (("speculative", base * median), ("baseline", base)):
            rows.append({"concurrency": c, "engine": engine, "output_tokens_per_s": tok_s,
                         "tpot_ms_p50": 1000 * c / tok_s, "tpot_ms_p95": 1300 * c / tok_s, "ttft_ms_p50": 40.0 * c,
                         "requests": 6 * max(6, 2 * c), "acceptance_rate": 0.5 if engine == "speculative" else None,
                         "mean_acceptance_length": 2.2 if engine == "speculative" else None,
                         "same_text": same_text, "same_text_requests": 6 * max(6, 2 * c) if same_text else 1,
                         "tokens_per_step": 2.0 if engine == "speculative" else 1.0,
                         "drafted_per_step": 3.0 if engine == "speculative" else 0.0})
        entries.append({"concurrency": c, "speedup": median, "low": low, "high": high, "repeats": 6,
                        "verdict": "made up", "description": f"{median:.2f}x ({low:.2f}-{high:.2f})"})
    return {"kind": "specdec-vllm-load", "format": 1, "machine": "Made-up CPU, 2 cores", "date": "2026-12-07T17:00:00Z",
            "command": f"python -m specdec load --vllm-url http://127.0.0.1:8000 --concurrency 1,2,4,8,16,32 # {method}",
            "speculative": server(method, k, "http://127.0.0.1:8000"), "baseline": server(None, None, "http://127.0.0.1:8001"),
            "settings": {"concurrency": list(CONCURRENCIES), "max_new_tokens": 9, "rounds": 2, "pairs": 6,
                         "settle_s": 1.5, "prompts": 6, "prompt_tokens": [30] * 6},
            "rows": rows, "speedups": entries, "crossover": crossover(entries),
            "samples": [sample(c, p) for c in CONCURRENCIES for p in (0, 1)]}


def measurement():
    from specdec.vllm.load_shipped import combine

    return combine([run(), run("draft_model", 3, DRAFT_SPEEDUPS)], "docs/notebook/made-up.md")


def record(live=False):
    return {"measurement": copy.deepcopy(measurement()), "live": live}
