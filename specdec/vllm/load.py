"""Speculation under load: closed-loop clients against a speculative vLLM server and a baseline server of the same
target, concurrency by concurrency, so that the speedup is measured where requests share the engine's steps.

At concurrency c, a **loop** is c client threads released together; each takes the next request of a fixed list
(request i asks prompt i mod P, greedy, exactly `max_new_tokens` output tokens: min_tokens = max_tokens and
ignore_eos, so every request of both servers counts the same tokens) and sends the next as soon as its answer has
ended, until the list is done (max(P, rounds × c) requests: every prompt at least once, every client `rounds`
requests). Tokens/s of a loop = the output tokens of all its requests / its makespan (the clients' release to the
last byte of the last answer, time.perf_counter on the client); the prompt's tokens do not count. A request's
TTFT is its first streamed token's arrival after it was sent, its TPOT (time per output token) the rest of its
answer over the tokens after the first.

At each concurrency, first one untimed **warm-up** loop of c requests on each server (vLLM may compile or allocate
for a new batch size), then `pairs` timed pairs of loops, one on each server, alternating which goes first
(specdec/measure/speedup.py's measure: the median ratio of the pairs' tokens/s with its distribution-free 95%
interval), each loop preceded by `settle_s` untimed seconds (vLLM's CPU worker stays busy about a second after its
last request; a loop started at once would share the cores with it). Acceptance comes from vLLM's own per-request
record (`--per-request-spec-decode-metrics detailed`), pooled over the speculative loops' requests. Greedy outputs are
compared with a **reference**: each prompt alone (concurrency 1) on the baseline server, once, untimed, before the
first level. `hold()` is entered around each concurrency level's work (the CLI's --lock-file: the exclusive lock of a
shared machine), so a long run leaves room to others between levels.
"""
from __future__ import annotations

import itertools
import threading
import time
from urllib.parse import urlsplit
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, ContextManager, Iterator, Optional

from specdec.measure.speedup import Estimate, Policy, Timing, measure
from specdec.vllm.client import VllmError, normalise_url
from specdec.vllm.engine import Server

ENGINES = ("speculative", "baseline")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SETTLE_S = 1.5
CONCURRENCY_MAX = 256


@dataclass(frozen=True)
class LoadSettings:
    """What a load test runs at every concurrency."""

    concurrencies: tuple[int, ...]
    max_new_tokens: int
    rounds: int = 2  # requests per client in one loop
    pairs: int = 6  # timed (speculative, baseline) pairs of loops per concurrency: 6 is the fewest with an interval
    settle_s: float = SETTLE_S

    def requests(self, concurrency: int, prompts: int) -> int:
        """Requests in one loop: every prompt at least once, every client `rounds` requests."""
        return max(prompts, self.rounds * concurrency)


@dataclass
class RequestRecord:
    """One request of a loop, as its client saw it. Times in seconds: sent_s since the loop's start, the others
    since the request was sent."""

    prompt: int
    token_ids: list[int]
    sent_s: float
    first_token_s: float
    wall_s: float
    chunk_sizes: list[int]
    chunk_times: list[float]
    finish_reason: Optional[str]
    per_step_accepted: list[int] = field(default_factory=list)
    per_step_drafted: list[int] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return len(self.token_ids)

    @property
    def done_s(self) -> float:
        return self.sent_s + self.wall_s

    @property
    def tpot_s(self) -> Optional[float]:
        """Time per output token after the first (None for a one-token answer)."""
        return (self.wall_s - self.first_token_s) / (self.tokens - 1) if self.tokens > 1 else None


@dataclass
class Loop:
    """One closed loop on one server."""

    engine: str
    concurrency: int
    requests: list[RequestRecord]
    makespan_s: float

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.requests)

    @property
    def tokens_per_s(self) -> Optional[float]:
        return self.tokens / self.makespan_s if self.makespan_s > 0 else None


@dataclass
class Level:
    """One concurrency: its timed loops on each server and the speedup's estimate."""

    concurrency: int
    estimate: Estimate
    loops: dict[str, list[Loop]]


def parse_concurrencies(text: str) -> tuple[int, ...]:
    """'1,2,4,8' -> (1, 2, 4, 8): positive integers up to CONCURRENCY_MAX, in increasing order, no repeats."""
    parts = [p.strip() for p in str(text or "").split(",") if p.strip()]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise VllmError(f"--concurrency must be comma-separated whole numbers such as 1,2,4,8, got {text!r}") from None
    if not values or any(not 1 <= v <= CONCURRENCY_MAX for v in values):
        raise VllmError(f"--concurrency needs numbers from 1 to {CONCURRENCY_MAX}, got {text!r}")
    if len(set(values)) != len(values):
        raise VllmError(f"--concurrency lists a number twice: {text!r}")
    return tuple(sorted(values))


def off_this_machine(url: str) -> bool:
    """True when `url` is not a loopback address: a load test sends hundreds of requests, so it runs only against
    servers on this machine."""
    return urlsplit(normalise_url(url)).hostname not in LOOPBACK


def fixed_pairs(pairs: int) -> Policy:
    """Exactly `pairs` timed pairs, whatever the interval."""
    return Policy(min_repeats=pairs, floor_repeats=pairs, max_repeats=pairs, tolerance=0.0, budget_s=0.0,
                  hard_budget_s=0.0)


# --- one request, one loop --------------------------------------------------------------------------------------

def send(server: Server, prompt: int, prompt_ids: list[int], max_tokens: int, started: float) -> RequestRecord:
    """One greedy request of exactly `max_tokens` output tokens (no per-token texts: a load test's request)."""
    sent = time.perf_counter() - started
    done = server.client.complete(prompt_ids, max_tokens, temperature=0.0, seed=None, exact_tokens=True,
                                  token_texts=False)
    if len(done.token_ids) != max_tokens:
        raise VllmError(f"{server.client.url} returned {len(done.token_ids)} tokens when asked for exactly {max_tokens} "
                        f"(min_tokens and ignore_eos ignored?)")
    spec = done.spec or {}
    return RequestRecord(prompt, done.token_ids, sent, done.chunks[0].arrived_s if done.chunks else done.wall_s,
                         done.wall_s, [len(c.token_ids) for c in done.chunks], [c.arrived_s for c in done.chunks],
                         done.finish_reason, list(spec.get("per_step_accepted") or []),
                         list(spec.get("per_step_drafted") or []))


def closed_loop(server: Server, engine: str, prompts: list[list[int]], concurrency: int, requests: int,
                max_tokens: int) -> Loop:
    """`concurrency` clients released together over `requests` requests (request i: prompt i mod P), each sending
    its next as soon as its answer ends. The first failure stops every client from taking another request and is
    raised once all have returned."""
    order, lock, failed, records, errors = itertools.count(), threading.Lock(), threading.Event(), [], []
    gate = threading.Barrier(concurrency + 1)
    started = [0.0]

    def client() -> None:
        gate.wait()
        while not failed.is_set():
            with lock:
                i = next(order)
            if i >= requests:
                return
            try:
                record = send(server, i % len(prompts), prompts[i % len(prompts)], max_tokens, started[0])
            except Exception as exc:  # noqa: BLE001 (raised in the caller's thread below)
                errors.append(exc)
                failed.set()
                return
            with lock:
                records.append(record)

    threads = [threading.Thread(target=client, daemon=True, name=f"load-client-{j}") for j in range(concurrency)]
    for thread in threads:
        thread.start()
    started[0] = time.perf_counter()
    gate.wait()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0] if isinstance(errors[0], VllmError) else VllmError(f"a load-test request failed: {errors[0]}")
    return Loop(engine, concurrency, sorted(records, key=lambda r: r.sent_s), max(r.done_s for r in records))


# --- one concurrency, a whole test ----------------------------------------------------------------------------------

def reference_outputs(baseline: Server, prompts: list[list[int]], max_tokens: int) -> list[list[int]]:
    """Each prompt's greedy output alone on the baseline server (concurrency 1): what same_text compares with."""
    return [send(baseline, i, ids, max_tokens, time.perf_counter()).token_ids for i, ids in enumerate(prompts)]


def measure_level(lead: Server, baseline: Server, prompts: list[list[int]], concurrency: int,
                  settings: LoadSettings, sleep: Callable[[float], None] = time.sleep) -> Level:
    """One concurrency: a warm-up loop on each server, then `settings.pairs` timed pairs (module docstring)."""
    servers = {"speculative": lead, "baseline": baseline}
    requests = settings.requests(concurrency, len(prompts))
    for engine in ENGINES:  # untimed: a new batch size's first steps
        closed_loop(servers[engine], engine, prompts, concurrency, concurrency, settings.max_new_tokens)
    loops: dict[str, list[Loop]] = {engine: [] for engine in ENGINES}

    def timed(engine: str) -> Timing:
        sleep(settings.settle_s)
        loop = closed_loop(servers[engine], engine, prompts, concurrency, requests, settings.max_new_tokens)
        loops[engine].append(loop)
        return Timing(loop.tokens, loop.makespan_s)

    estimates = list(measure(lambda: timed("speculative"), lambda tokens: timed("baseline"),
                             fixed_pairs(settings.pairs)))
    return Level(concurrency, estimates[-1], loops)


def load_test(lead: Server, baseline: Server, prompts: list[list[int]], settings: LoadSettings,
              hold: Callable[[], ContextManager] = nullcontext) -> Iterator[tuple[Optional[list], Level]]:
    """Generator: (the reference outputs, the Level) after each concurrency, in increasing order; each level's work,
    and the reference pass before the first, inside `hold()`."""
    reference = None
    for concurrency in settings.concurrencies:
        with hold():
            if reference is None:
                reference = reference_outputs(baseline, prompts, settings.max_new_tokens)
            level = measure_level(lead, baseline, prompts, concurrency, settings)
        yield reference, level
