"""An independent check of `python -m specdec load`'s throughput: the same closed loop written again on the standard
library's http.client, with none of the lab's client code (no streaming, no per-token parsing), alternating the two
servers as the load test does.

    python experiments/load_check_independent.py --vllm-url URL --vllm-baseline-url URL --concurrency 8 \
        --prompts-file assets/measurements/load-prompts.json --max-new-tokens 48 [--loops 6] [--settle-s 1.5]

Per loop: `concurrency` threads released together take requests from a list of max(P, 2 × concurrency) (request i:
prompt i mod P, in the served model's chat template as the server's /tokenize gives it, greedy, max_tokens = min_tokens
= N, ignore_eos), each one POST /v1/completions without streaming; tokens/s = the usage's completion tokens of all
requests / (last answer received − release), time.perf_counter. Prints one line per loop and the medians per server
and their ratio, and with --json one object.
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time
from urllib.parse import urlsplit


def post(url: str, path: str, body: dict, timeout: float = 300.0) -> dict:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{url}{path}: HTTP {response.status}: {data[:200]!r}")
        return json.loads(data)
    finally:
        connection.close()


def get(url: str, path: str) -> dict:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", path)
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def loop(url: str, model: str, prompts: list[list[int]], concurrency: int, tokens: int) -> tuple[float, int]:
    """(seconds, completion tokens) of one closed loop."""
    requests = max(len(prompts), 2 * concurrency)
    next_index, lock, counted, errors = [0], threading.Lock(), [0], []
    gate = threading.Barrier(concurrency + 1)

    def client():
        gate.wait()
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= requests or errors:
                return
            try:
                reply = post(url, "/v1/completions", {"model": model, "prompt": prompts[i % len(prompts)],
                                                      "max_tokens": tokens, "min_tokens": tokens, "ignore_eos": True,
                                                      "temperature": 0.0})
            except Exception as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)
                return
            with lock:
                counted[0] += reply["usage"]["completion_tokens"]

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    gate.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    if errors:
        raise SystemExit(f"error: {errors[0]}")
    return seconds, counted[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-url", required=True)
    parser.add_argument("--vllm-baseline-url", required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--prompts-file", required=True)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--loops", type=int, default=6, help="loops per server, alternating which goes first")
    parser.add_argument("--settle-s", type=float, default=1.5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for url in (args.vllm_url, args.vllm_baseline_url):
        if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit("error: servers on this machine only")
    texts = json.loads(open(args.prompts_file).read())
    model = get(args.vllm_url, "/v1/models")["data"][0]["id"]
    prompts = [post(args.vllm_url, "/tokenize", {"model": model, "add_generation_prompt": True,
                                                 "messages": [{"role": "user", "content": t}]})["tokens"]
               for t in texts]
    servers = {"speculative": args.vllm_url, "baseline": args.vllm_baseline_url}
    for name in servers:  # warm-up, untimed
        loop(servers[name], model, prompts, args.concurrency, args.max_new_tokens)
    rates = {name: [] for name in servers}
    for i in range(args.loops):
        for name in (("speculative", "baseline") if i % 2 == 0 else ("baseline", "speculative")):
            time.sleep(args.settle_s)
            seconds, tokens = loop(servers[name], model, prompts, args.concurrency, args.max_new_tokens)
            rates[name].append(tokens / seconds)
            print(f"loop {i + 1} {name}: {tokens} tokens in {seconds:.2f} s = {tokens / seconds:.1f} tok/s", flush=True)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    ratios = sorted(s / b for s, b in zip(rates["speculative"], rates["baseline"]))
    print(f"concurrency {args.concurrency}: speculative {medians['speculative']:.1f} tok/s, baseline "
          f"{medians['baseline']:.1f} tok/s, median ratio {statistics.median(ratios):.2f} "
          f"(range {ratios[0]:.2f}–{ratios[-1]:.2f})")
    if args.json:
        print(json.dumps({"concurrency": args.concurrency, "tokens_per_s": rates, "medians": medians,
                          "ratios": ratios}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
