"""llama.cpp's own programs, run the way the comparison needs them (flags as the built version defines them in
common/arg.cpp and tools/llama-bench/llama-bench.cpp; checked against build 11434):

- llama_bench(): `llama-bench -m FILE -p 0 -n N -t T -r R -o json`, the decoding rate people quote ("tg128"): N tokens
  generated from an empty context, no sampling, one sample per repetition (`samples_ts`).
- LlamaServer: `llama-server` with one speculative configuration fixed at start (its per-request speculative fields are
  compiled out in this version): none, an n-gram type (`--spec-type ngram-simple|ngram-map-k|ngram-mod|ngram-cache`)
  or a draft model (`-md FILE --spec-draft-n-max K --spec-draft-n-min 0 --spec-draft-p-min 0`: a chain of K drafted
  tokens every step, as the lab's constant K). complete() sends token ids with greedy sampling (temperature 0),
  `n_predict` tokens with EOS ignored (the same token count as the lab's run), no prompt cache (`cache_prompt`
  false, and `--cache-ram 0`: every request evaluates its prompt, as every lab run prefills), and returns the tokens,
  the wall time the client saw and the server's own timings (draft_n / draft_n_accepted for speculation).
"""
from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from specdec.llamacpp.build import LlamaCppError, binary

START_TIMEOUT_S = 180
REQUEST_TIMEOUT_S = 600


def llama_bench(model: Path, threads: int, tokens: int = 128, repetitions: int = 1, warmup: bool = True) -> list[float]:
    """Tokens per second of each repetition of llama-bench's generation test (tg<tokens>) on `threads` threads."""
    command = [str(binary("llama-bench")), "-m", str(model), "-p", "0", "-n", str(tokens), "-t", str(threads),
               "-r", str(repetitions), "-o", "json"] + ([] if warmup else ["--no-warmup"])
    done = subprocess.run(command, capture_output=True, text=True, timeout=REQUEST_TIMEOUT_S)
    if done.returncode != 0:
        raise LlamaCppError(f"llama-bench failed ({done.returncode}): {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    try:
        results = json.loads(done.stdout)
        return [float(rate) for rate in results[0]["samples_ts"]]
    except (ValueError, KeyError, IndexError) as exc:
        raise LlamaCppError(f"llama-bench printed no result this code reads ({exc})") from None


@dataclass(frozen=True)
class SpecConfig:
    """One speculative configuration of llama-server: name as shown, spec type, draft model and K."""

    name: str
    spec_type: str = "none"  # llama.cpp's --spec-type, or "draft-simple" with a draft model
    draft: Optional[Path] = None
    k: int = 0  # --spec-draft-n-max (draft model); 0: llama.cpp's own default for the n-gram types

    def arguments(self) -> list[str]:
        if self.spec_type == "none":
            return []
        if self.draft is not None:
            return ["--spec-type", self.spec_type, "-md", str(self.draft), "--spec-draft-n-max", str(self.k),
                    "--spec-draft-n-min", "0", "--spec-draft-p-min", "0"]
        extra = ["--spec-draft-n-max", str(self.k)] if self.k else []
        return ["--spec-type", self.spec_type, *extra]


@dataclass
class Completion:
    token_ids: list[int]
    wall_s: float  # as the client saw it: the request's whole time (prompt, generation, HTTP)
    timings: dict = field(default_factory=dict)  # the server's: prompt_ms, predicted_ms, draft_n, draft_n_accepted

    @property
    def drafted(self) -> int:
        return int(self.timings.get("draft_n", 0))

    @property
    def accepted(self) -> int:
        return int(self.timings.get("draft_n_accepted", 0))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LlamaServer:
    """A llama-server on a free local port for one model and speculative configuration (a context manager)."""

    def __init__(self, model: Path, threads: int, spec: SpecConfig = SpecConfig("target only"), context: int = 2048,
                 log: Optional[Path] = None):
        self.model, self.threads, self.spec, self.context = model, threads, spec, context
        self.port = free_port()
        self.log = log
        self.process: Optional[subprocess.Popen] = None

    def command(self) -> list[str]:
        return [str(binary("llama-server")), "-m", str(self.model), "-t", str(self.threads), "-tb", str(self.threads),
                "-c", str(self.context), "-np", "1", "--cache-ram", "0", "--no-webui", "--host", "127.0.0.1",
                "--port", str(self.port), *self.spec.arguments()]

    def __enter__(self) -> "LlamaServer":
        out = open(self.log, "a") if self.log else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT)
        finally:
            if self.log:
                out.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LlamaCppError(f"llama-server ({self.spec.name}) exited with {self.process.returncode} at start"
                                    + (f" (log {self.log})" if self.log else ""))
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        self.__exit__(None, None, None)
        raise LlamaCppError(f"llama-server ({self.spec.name}) did not answer /health within {START_TIMEOUT_S} s")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def complete(self, prompt_ids: list[int], new_tokens: int) -> Completion:
        """Greedy generation of exactly new_tokens tokens after prompt_ids (EOS ignored, no prompt cache)."""
        body = {"prompt": list(prompt_ids), "n_predict": new_tokens, "temperature": 0.0, "ignore_eos": True,
                "cache_prompt": False, "return_tokens": True, "stream": False}
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/completion", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as answer:
                reply = json.loads(answer.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise LlamaCppError(f"llama-server ({self.spec.name}) request failed: {exc}") from None
        wall = time.perf_counter() - start
        return Completion([int(t) for t in reply.get("tokens", [])], wall, reply.get("timings", {}))
