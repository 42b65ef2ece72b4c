"""Generate and measure through vLLM servers: the lab's records (StepEvents, RunResult, Estimate) for them.

A speculative server (the lead) and, for a speedup, a second server without speculation (the baseline:
speculation is fixed when a vLLM server starts). The speedup uses specdec/measure/speedup.py unchanged: pairs
over the same number of new tokens (the baseline request asks for exactly as many with min_tokens and
ignore_eos), interleaved, repeated, the median ratio with its 95% interval. Tokens/s is what a client sees:
request sent to last byte, prefill and HTTP included, on both sides alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from specdec.engine.events import DecodeSettings, RunResult
from specdec.measure.speedup import INTERACTIVE, Measurement, Policy, Timing, measure
from specdec.vllm.client import Completion, VllmClient, VllmError
from specdec.vllm.fates import Alignment, AlignmentError, build_events, run_result
from specdec.vllm.ngram_replay import replay
from specdec.vllm.server_info import (
    ServerInfo,
    SpecCounters,
    require_baseline,
    require_speculation,
    server_info,
    spec_counters,
)


@dataclass
class Server:
    """A connected server: its client and what it runs."""

    client: VllmClient
    info: ServerInfo

    @property
    def label(self) -> str:
        """The draft name a RunResult carries: 'vllm ngram K=4' / 'vllm draft_model K=3' / None (baseline)."""
        return f"vllm {self.info.method} K={self.info.k}" if self.info.speculative else None


@dataclass
class VllmRun:
    """One streamed completion, coloured."""

    result: RunResult
    alignment: Alignment
    spec: Optional[dict]  # vLLM's metrics.speculative_decoding, as sent
    completion: Completion


def connect(url: str, model: Optional[str] = None, *, speculative: Optional[bool] = None,
            record_for: Optional[Callable[[str], Optional[dict]]] = None) -> Server:
    """Checks the server (reachable, vLLM, serves `model`; speculative True: has speculation, False: has
    none) and reads what it runs. record_for(url): the launcher's record for that URL, if it started it
    (default: launcher.record_for)."""
    if record_for is None:
        from specdec.vllm.launcher import record_for
    client = VllmClient(url, model)
    info = server_info(client, record_for(client.url))
    if speculative is True:
        require_speculation(info)
    elif speculative is False:
        require_baseline(info)
    return Server(client, info)


def server_counters(server: Server) -> Optional[SpecCounters]:
    """The server-wide spec_decode counters in /metrics now (every request since it started)."""
    return spec_counters(server.client.metrics_text(), server.info.model)


def server_rss_bytes(server: Server) -> Optional[int]:
    """The server's resident memory (its whole process group, from /proc) where the lab's launcher started it on
    this machine; None otherwise (vLLM's API does not expose it)."""
    if server.info.pid is None:
        return None
    from specdec.vllm.launcher import group_rss_bytes

    return group_rss_bytes(server.info.pid)


def check_same_model(lead: Server, baseline: Server) -> None:
    """A speedup compares one target with itself: both servers must load the same model."""
    if lead.info.root != baseline.info.root:
        raise VllmError(f"the two servers run different models ({lead.info.root} at {lead.info.url}, "
                        f"{baseline.info.root} at {baseline.info.url}): a speedup needs the same target")


def encode(server: Server, prompt: str, chat: bool = True) -> list[int]:
    """The prompt's ids as the server tokenises it (in the model's chat template when `chat`)."""
    if not (prompt or "").strip():
        raise VllmError("the prompt is empty")
    ids = server.client.tokenize_chat(prompt) if chat else server.client.tokenize(prompt)
    if not ids:
        raise VllmError("the prompt is empty after tokenisation")
    return ids


def _request(settings: DecodeSettings) -> dict:
    return {"temperature": settings.temperature, "seed": settings.seed, "top_p": settings.top_p,
            "top_k": settings.top_k}


def stream_run(server: Server, prompt_ids: list[int], settings: DecodeSettings) -> Iterator[list]:
    """Generator: after every streamed chunk, provisional StepEvents (each chunk's tokens as plain steps:
    vLLM sends a request's per-step acceptance only with the final chunk); returns the coloured VllmRun."""
    chunks, seen = server.client.stream(prompt_ids, settings.max_new_tokens, **_request(settings)), []
    while True:
        try:
            seen.append(next(chunks))
        except StopIteration as stop:
            return colour(server, prompt_ids, settings, stop.value)
        yield provisional_events(seen)


def provisional_events(chunks: list) -> list:
    """The tokens so far, one plain step per token (no fates yet)."""
    ids = [t for c in chunks for t in c.token_ids]
    texts = [t for c in chunks for t in c.texts]
    times = _spread([c.arrived_s for c in chunks], [len(c.token_ids) for c in chunks])
    events, _ = build_events(ids, texts, [1] * len(ids), times, [], [])
    return events


def _spread(times: list[float], sizes: list[int]) -> list[float]:
    """Per-token arrival times from per-chunk ones (every token of a chunk arrives with it)."""
    return [t for t, n in zip(times, sizes) for _ in range(n)]


def colour(server: Server, prompt_ids: list[int], settings: DecodeSettings, done: Completion) -> VllmRun:
    """The finished completion as coloured StepEvents; a speculative server must have sent its record."""
    spec = done.spec
    if server.info.speculative and (spec is None or "per_step_accepted" not in spec) and done.token_ids and \
            (spec is None or spec.get("num_spec_steps", 0) > 0):
        raise VllmError(f"the vLLM server at {server.client.url} sends no per-step acceptance"
                        f"{' (its record: ' + spec['shape'] + ')' if spec else ''}: start it with "
                        f"--per-request-spec-decode-metrics detailed (`python -m specdec vllm serve` does)")
    accepted = list((spec or {}).get("per_step_accepted") or [])
    drafted = list((spec or {}).get("per_step_drafted") or [])
    replayed, text_of = replay_ngram(server, prompt_ids, done, accepted, drafted)
    try:
        events, alignment = build_events(done.token_ids, done.texts, [len(c.token_ids) for c in done.chunks],
                                         [c.arrived_s for c in done.chunks], accepted, drafted, done.finish_reason,
                                         replayed, text_of)
    except AlignmentError as exc:
        raise VllmError(f"vLLM's per-step record does not fit its tokens: {exc}") from None
    result = run_result(events, prompt_ids, done.wall_s, settings, server.info.model, server.label)
    return VllmRun(result, alignment, spec, done)


def replay_ngram(server: Server, prompt_ids: list[int], done: Completion, accepted: list[int], drafted: list[int]):
    """(steps, text_of) from replaying vLLM's ngram drafting (ngram_replay.py) when the server runs ngram with a
    known configuration (the launcher's record) and the replay agrees with vLLM's record; else (None, None)."""
    config = server.info.speculative_config or {}
    if config.get("method") != "ngram" or not accepted or not server.info.max_model_len:
        return None, None
    steps = replay(prompt_ids, done.token_ids, accepted, drafted, config, server.info.max_model_len)
    if steps is None:
        return None, None
    known = dict(zip(done.token_ids, done.texts))

    def text_of(token_id: int) -> str:
        if token_id not in known:
            known[token_id] = server.client.detokenize(token_id)
        return known[token_id]

    return steps, text_of


def run(server: Server, prompt_ids: list[int], settings: DecodeSettings) -> VllmRun:
    """stream_run to its end."""
    gen = stream_run(server, prompt_ids, settings)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


# --- the speedup --------------------------------------------------------------------------------------

def contestants(lead: Server, baseline: Server, prompt_ids: list[int], settings: DecodeSettings):
    """(lead, follow) for measurement.measure: the speculative server's completion, then exactly as many
    tokens from the baseline server."""
    def lead_run() -> Timing:
        done = run(lead, prompt_ids, settings)
        return Timing(done.result.metrics.new_tokens, done.completion.wall_s, None, done.result)

    def follow_run(tokens: int) -> Timing:
        done = baseline.client.complete(prompt_ids, max(1, tokens), exact_tokens=True, **_request(settings))
        if len(done.token_ids) != max(1, tokens):
            raise VllmError(f"the baseline server returned {len(done.token_ids)} tokens when asked for exactly "
                            f"{tokens} (min_tokens and ignore_eos ignored?)")
        result = colour(baseline, prompt_ids, settings, done).result
        return Timing(len(done.token_ids), done.wall_s, None, result)

    return lead_run, follow_run


def measurement_key(lead: Server, baseline: Server, prompt_ids: list[int], settings: DecodeSettings) -> tuple:
    return ("vllm", lead.client.url, lead.info.model, baseline.client.url, tuple(prompt_ids), settings)


def measure_speedup(lead: Server, baseline: Server, prompt_ids: list[int], settings: DecodeSettings, *,
                    cache: Optional[dict] = None, policy: Policy = INTERACTIVE,
                    should_stop: Callable[[], bool] = lambda: False):
    """Generator of Estimates (specdec.measure.speedup.measure): speculative server vs baseline server."""
    check_same_model(lead, baseline)
    cache = {} if cache is None else cache
    key = measurement_key(lead, baseline, prompt_ids, settings)
    m = cache.setdefault(key, Measurement(key=key))
    lead_run, follow_run = contestants(lead, baseline, prompt_ids, settings)
    yield from measure(lead_run, follow_run, policy, measurement=m, should_stop=should_stop)
