"""A scripted stand-in for vLLM's HTTP API (specdec.vllm.client.VllmClient), so the engine side
(specdec/vllm/engine.py, server_info.py, fates.py) and the UI callbacks on top run for real without a server;
and a stand-in for the launcher that "starts" such servers. Real servers: test_vllm_server.py."""
from __future__ import annotations

import itertools

from specdec.vllm.client import Chunk, Completion, VllmClient, VllmError

MODEL, ROOT = "smollm2-135m-instruct", "/models/smollm2-135m-instruct"
ACCEPTED = (3, 1, 0, 2)  # a speculative server's accepted drafts per verification step, cycled


class FakeServers:
    """URL -> K (0: no speculation). `patch(monkeypatch)` makes specdec.vllm.engine talk to them."""

    def __init__(self, **urls: int):
        self.k = {f"http://127.0.0.1:{port[1:]}": k for port, k in urls.items()}  # p8000=4 -> :8000, K=4
        self.requests: list[tuple[str, int, bool]] = []  # (url, max_tokens, exact_tokens)

    def patch(self, monkeypatch):
        servers = self

        class Client(FakeClient):
            def __init__(self, url, model=None, **kwargs):
                super().__init__(servers, url, model)

        monkeypatch.setattr("specdec.vllm.engine.VllmClient", Client)
        return self


class FakeClient:
    def __init__(self, servers: FakeServers, url: str, model=None):
        self.servers, self.url, self.model = servers, url.rstrip("/"), model

    def _k(self) -> int:
        if self.url not in self.servers.k:
            raise VllmError(f"cannot reach a vLLM server at {self.url} (Connection refused): is it running?")
        return self.servers.k[self.url]

    def health(self) -> bool:
        return self.url in self.servers.k

    def models(self):
        self._k()
        return [{"id": MODEL, "root": ROOT, "max_model_len": 2048}]

    def resolve_model(self) -> str:
        self._k()
        if self.model not in (None, MODEL):
            raise VllmError(f"{self.url} serves {MODEL!r}, not {self.model!r}: pick one of those names")
        self.model = MODEL
        return MODEL

    def _json(self, path, body=None, timeout=None):
        return {"version": "0.32.0"}

    def metrics_text(self) -> str:
        k = self._k()
        if not k:
            return "vllm:num_requests_running 0\n"
        lines = [f'vllm:spec_decode_num_drafts_total{{model_name="{MODEL}"}} 10',
                 f'vllm:spec_decode_num_draft_tokens_total{{model_name="{MODEL}"}} {10 * k}',
                 f'vllm:spec_decode_num_accepted_tokens_total{{model_name="{MODEL}"}} 15']
        lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="{MODEL}",position="{i}"}} '
                  f'{8 - 2 * i}' for i in range(k)]
        return "\n".join(lines) + "\n"

    def tokenize_chat(self, prompt: str) -> list[int]:
        return self.tokenize(prompt)

    def tokenize(self, text: str) -> list[int]:
        self._k()
        return [ord(c) % 256 for c in text]

    def detokenize(self, token_id: int) -> str:
        return f" t{token_id}"

    def stream(self, prompt_ids, max_tokens, *, exact_tokens=False, **kwargs):
        """One chunk per engine step: the prefill's token, then (speculative) a_i accepted drafts + one target
        token per verification step; vLLM's record with the final chunk."""
        k = self._k()
        self.servers.requests.append((self.url, max_tokens, exact_tokens))
        sizes, accepted = [1], []
        for a in itertools.cycle(ACCEPTED if k else (0,)):
            left = max_tokens - sum(sizes)
            if left <= 0:
                break
            a = min(a, k, left - 1)
            if k:
                accepted.append(a)
            sizes.append(a + 1)
        done, token = Completion(), 1000
        for i, size in enumerate(sizes):
            ids = list(range(token, token + size))
            token += size
            chunk = Chunk(ids, [f" t{t}" for t in ids], 0.002 * (i + 1),
                          "length" if i == len(sizes) - 1 else None)
            done.chunks.append(chunk)
            yield chunk
        done.wall_s, done.finish_reason, done.usage = 0.002 * len(sizes), "length", {"completion_tokens": token - 1000}
        if k:
            steps = len(accepted)
            done.spec = {"per_step_accepted": accepted, "per_step_drafted": [k] * steps,
                         "num_spec_steps": steps, "num_accepted_draft_tokens": sum(accepted),
                         "num_draft_tokens": k * steps, "draft_acceptance_rate": sum(accepted) / (k * steps),
                         "mean_acceptance_length": 1 + sum(accepted) / steps,
                         "acceptance_histogram": [accepted.count(j) for j in range(k + 1)]}
        return done

    complete = VllmClient.complete  # the real one, over the scripted stream


class FakeLauncher:
    """launcher.start / poll_healthy / stop / record_for for the vLLM sweep: each start adds a fake server at a new
    port with the spec's K; stop removes it. Records what ran, to check that nothing is left."""

    def __init__(self, servers: FakeServers, health_rounds: int = 2):
        self.servers, self.health_rounds = servers, health_rounds
        self.started: list[dict] = []
        self.stopped: list[dict] = []
        self._ports = itertools.count(9100)

    def start(self, python, spec, say=print):
        url = f"http://127.0.0.1:{next(self._ports)}"
        record = {"pid": 0, "url": url, "port": 0, "log": "fake.log", "method": spec.method, "k": spec.k,
                  "draft": spec.draft, "dtype": spec.dtype, "speculative_config": spec.speculative_config(),
                  "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "spec": spec}
        self.servers.k[url] = spec.k
        self.started.append(record)
        return record

    def poll_healthy(self, records):
        for i in range(self.health_rounds):
            yield f"Waiting for /health ({i} s): loading" if i else None

    def record_for(self, url):
        return next((r for r in self.started if r["url"] == url and r not in self.stopped), None)

    def stop(self, record):
        self.servers.k.pop(record["url"], None)
        self.stopped.append(record)

    @property
    def running(self) -> list[dict]:
        return [r for r in self.started if r not in self.stopped]
