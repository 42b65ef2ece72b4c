"""A client for a running vLLM server's OpenAI-compatible API, on the standard library (urllib).

It talks only to the base URL it is given (no redirects to other hosts, no other address), and turns
every way a server can fail a user into one VllmError with a message meant to be shown as is:
unreachable, not vLLM, no speculation, wrong model name, a stream that ends early.

Endpoints used (vLLM 0.32): GET /health, GET /v1/models, GET /metrics, POST /tokenize, and POST
/v1/completions with `return_token_ids` (the ids of every streamed delta: token boundaries come from the
server, not from re-tokenising its text), `logprobs: 0` (each token's own text) and
`stream_options.include_usage` (the final chunk then carries vLLM's per-request speculative record when the
server runs with `--per-request-spec-decode-metrics detailed` (v0.32: `metrics.speculative_decoding`) or
`--per-request-spec-decode-stats` (newer: per choice, `speculative_decoding_stats`); fates.spec_record reads both).
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Iterator, Optional
from urllib.parse import urlsplit

from specdec.errors import SpecDecError
from specdec.vllm.fates import spec_record

CONNECT_TIMEOUT_S = 5.0  # /health, /v1/models, /metrics: a server that is up answers at once
READ_TIMEOUT_S = 120.0  # between two streamed chunks: a live CPU server sends one per engine step
ABORTED = ("abort", "error")  # vLLM's finish reasons for a request it did not complete


class VllmError(SpecDecError):
    """A vLLM server could not be used; the message says why and what to do."""


def normalise_url(url: str) -> str:
    """'127.0.0.1:8000/' -> 'http://127.0.0.1:8000'; refuses anything but a plain http(s) base URL."""
    url = (url or "").strip().rstrip("/")
    if not url:
        raise VllmError("no vLLM server URL given (e.g. http://127.0.0.1:8000; `python -m specdec vllm serve` "
                        "prints one)")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment or \
            parts.username or parts.password:
        raise VllmError(f"{url!r} is not a server URL: give http://HOST:PORT")
    if parts.path.endswith("/v1"):
        url = url[: -len("/v1")]
    return url


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The lab contacts no address but the URLs given: a redirect is an error, not a hop elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise VllmError(f"{req.full_url} redirects to {newurl}: give the vLLM server's own URL")


_OPENER = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))


@dataclass
class Chunk:
    """One streamed delta: the ids and per-token texts the server sent together, and when it arrived."""

    token_ids: list[int]
    texts: list[str]
    arrived_s: float  # seconds since the request was sent
    finish_reason: Optional[str] = None


@dataclass
class Completion:
    """A whole streamed completion."""

    chunks: list[Chunk] = field(default_factory=list)
    spec: Optional[dict] = None  # vLLM's per-request record, either shape (fates.spec_record; None: not sent)
    usage: Optional[dict] = None
    wall_s: float = 0.0  # request sent -> last byte received
    finish_reason: Optional[str] = None

    @property
    def token_ids(self) -> list[int]:
        return [t for c in self.chunks for t in c.token_ids]

    @property
    def texts(self) -> list[str]:
        return [t for c in self.chunks for t in c.texts]


class VllmClient:
    """One server at `url`, serving `model` (None: whatever /v1/models lists first)."""

    def __init__(self, url: str, model: Optional[str] = None, read_timeout_s: float = READ_TIMEOUT_S):
        self.url = normalise_url(url)
        self.model = model
        self.read_timeout_s = read_timeout_s

    # --- plumbing -----------------------------------------------------------------------------------
    def _open(self, path: str, body: Optional[dict] = None, timeout: float = CONNECT_TIMEOUT_S):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data,
                                         headers={"Content-Type": "application/json"} if data else {})
        try:
            return _OPENER.open(request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            raise VllmError(self._http_problem(path, exc)) from None
        except VllmError:
            raise
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise VllmError(f"cannot reach a vLLM server at {self.url} ({reason}): is it running? "
                            f"(`python -m specdec vllm serve` starts one)") from None

    def _http_problem(self, path: str, exc: urllib.error.HTTPError) -> str:
        detail = _error_detail(exc)
        if exc.code == 404 and path in ("/v1/models", "/health", "/tokenize", "/v1/completions"):
            return f"{self.url} answers but is not a vLLM server ({path}: 404 Not Found)"
        if "does not exist" in detail and "model" in detail.lower():
            return f"{self.url} does not serve the model {self.model!r}: {detail}"
        return f"{self.url}{path} answered HTTP {exc.code}: {detail or exc.reason}"

    def _json(self, path: str, body: Optional[dict] = None, timeout: float = CONNECT_TIMEOUT_S) -> dict:
        with self._open(path, body, timeout) as response:
            raw = response.read()
        try:
            return json.loads(raw)
        except ValueError:
            raise VllmError(f"{self.url} answers {path} with something other than JSON: not a vLLM server") from None

    # --- what the server is --------------------------------------------------------------------------
    def health(self) -> bool:
        """True when /health answers 200 (a vLLM server that finished starting)."""
        try:
            with self._open("/health") as response:
                return response.status == 200
        except VllmError:
            return False

    def models(self) -> list[dict]:
        """/v1/models' entries; checks it looks like vLLM's (an id and vLLM's max_model_len)."""
        listing = self._json("/v1/models")
        entries = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) and "id" in e for e in entries):
            raise VllmError(f"{self.url}/v1/models lists no models: not a vLLM server")
        if not any("max_model_len" in e for e in entries):
            raise VllmError(f"{self.url} speaks the OpenAI API but is not vLLM (its /v1/models has no max_model_len)")
        return entries

    def resolve_model(self) -> str:
        """The served model's name: `model` when the server serves it, else its first (only) model."""
        names = [e["id"] for e in self.models()]
        if self.model is None:
            self.model = names[0]
        elif self.model not in names:
            raise VllmError(f"{self.url} serves {', '.join(map(repr, names))}, not {self.model!r}: "
                            f"pick one of those names")
        return self.model

    def metrics_text(self) -> str:
        with self._open("/metrics") as response:
            return response.read().decode("utf-8", "replace")

    def tokenize_chat(self, prompt: str) -> list[int]:
        """The prompt wrapped in the served model's chat template, as the server tokenises it."""
        reply = self._json("/tokenize", {"model": self.resolve_model(), "add_generation_prompt": True,
                                         "messages": [{"role": "user", "content": prompt}]})
        return [int(t) for t in reply.get("tokens", [])]

    def tokenize(self, text: str) -> list[int]:
        reply = self._json("/tokenize", {"model": self.resolve_model(), "prompt": text, "add_special_tokens": True})
        return [int(t) for t in reply.get("tokens", [])]

    def detokenize(self, token_id: int) -> str:
        """One token's text, as the served model's tokenizer writes it."""
        return str(self._json("/detokenize", {"model": self.resolve_model(), "tokens": [int(token_id)]})
                   .get("prompt", ""))

    # --- generating -------------------------------------------------------------------------------------
    def stream(self, prompt_ids: list[int], max_tokens: int, *, temperature: float = 0.0, seed: Optional[int] = 0,
               exact_tokens: bool = False, top_p: Optional[float] = None,
               top_k: Optional[int] = None, token_texts: bool = True) -> Iterator[Chunk]:
        """Generator of the completion's Chunks; returns the Completion (spec metrics, usage, wall time).
        exact_tokens: min_tokens = max_tokens and ignore_eos, for a timed run of exactly max_tokens.
        token_texts False: no `logprobs` (each token's own text, work for the server), as a load test asks."""
        body = {"model": self.resolve_model(), "prompt": list(prompt_ids), "max_tokens": int(max_tokens),
                "temperature": float(temperature), "stream": True, "stream_options": {"include_usage": True},
                "return_token_ids": True, "skip_special_tokens": False}
        if token_texts:
            body["logprobs"] = 0
        if seed is not None:
            body["seed"] = int(seed)
        if top_p is not None:
            body["top_p"] = float(top_p)
        if top_k:
            body["top_k"] = int(top_k)
        if exact_tokens:
            body.update(min_tokens=int(max_tokens), ignore_eos=True)
        done = Completion()
        started = time.perf_counter()
        with self._open("/v1/completions", body, timeout=self.read_timeout_s) as response:
            for event in _sse_events(response, self.url):
                chunk = _read_event(event, done, time.perf_counter() - started)
                if chunk is not None:
                    done.chunks.append(chunk)
                    yield chunk
        done.wall_s = time.perf_counter() - started
        if done.usage is None:
            raise VllmError(f"the stream from {self.url} ended before the completion did (the server stopped or "
                            f"crashed after {len(done.token_ids)} tokens)")
        if done.finish_reason in ABORTED:  # a server shutting down ends its requests so, with no per-step record
            raise VllmError(f"the stream from {self.url} ended before the completion did (the server aborted the "
                            f"request after {len(done.token_ids)} tokens: it was stopped or crashed)")
        return done

    def complete(self, prompt_ids: list[int], max_tokens: int, **kwargs) -> Completion:
        """The whole streamed completion at once."""
        gen = self.stream(prompt_ids, max_tokens, **kwargs)
        while True:
            try:
                next(gen)
            except StopIteration as stop:
                return stop.value


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        return ""
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message", "") if isinstance(error, dict) else str(error)
    return str(message).strip().splitlines()[0] if str(message).strip() else ""


def _sse_events(response, url: str) -> Iterator[dict]:
    """The JSON objects of a server-sent event stream, up to `data: [DONE]`."""
    try:
        for raw in response:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            payload = line[len("data:"):].strip()
            if payload == "[DONE]":
                return
            try:
                yield json.loads(payload)
            except ValueError:
                raise VllmError(f"{url} streamed something other than JSON: not a vLLM server") from None
    except (OSError, urllib.error.URLError) as exc:  # connection reset, timeout: the server died mid-stream
        raise VllmError(f"the connection to {url} broke mid-stream ({exc}): the server stopped or crashed") from None


def _read_event(event: dict, done: Completion, arrived_s: float) -> Optional[Chunk]:
    """Records usage / metrics / errors of one streamed object; returns its Chunk when it carries tokens."""
    if "error" in event and not event.get("choices"):
        error = event["error"]
        raise VllmError(f"the server reported an error mid-stream: {error.get('message', error) if isinstance(error, dict) else error}")
    record = spec_record(event)  # either shape (fates.spec_record), on the final or usage chunk
    if record is not None:
        done.spec = record
    if event.get("usage") is not None:
        done.usage = event["usage"]
    choices = event.get("choices") or []
    if not choices:
        return None
    choice = choices[0]
    ids = choice.get("token_ids")
    if ids is None and (record is not None or choice.get("finish_reason")) and not choice.get("text"):
        done.finish_reason = choice.get("finish_reason") or done.finish_reason
        return None  # a final chunk carrying the record (and the finish reason), no tokens
    if ids is None:
        raise VllmError("the server ignores return_token_ids: not vLLM 0.10 or newer")
    logprobs = choice.get("logprobs") or {}
    texts = list(logprobs.get("tokens") or [])
    if len(texts) != len(ids):  # no per-token texts: fall back to the delta's text on its last token
        texts = [""] * (len(ids) - 1) + [choice.get("text", "")] if ids else []
    if choice.get("finish_reason"):
        done.finish_reason = choice["finish_reason"]
    if not ids:
        return None
    return Chunk([int(t) for t in ids], texts, arrived_s, choice.get("finish_reason"))
