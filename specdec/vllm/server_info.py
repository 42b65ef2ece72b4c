"""What a vLLM server is running, from its own API, plus what the lab's launcher recorded when it started it.

From the API (any vLLM server): the served model name and its folder or hub id (/v1/models), the context
length, the vLLM version (/version), whether speculation is on and its K (/metrics: the per-position
counters `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0".."K-1"}` exist only with
speculation), and the server-wide counters. vLLM's API does not say which speculative method, dtype or
parallelism a server runs; those come from the launcher's record (launcher.py) when the lab started the
server at that URL, else they are shown as not exposed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from specdec.vllm.client import VllmClient, VllmError

NOT_EXPOSED = "not exposed by the server's API"
_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)')


@dataclass
class SpecCounters:
    """vLLM's server-wide counters (all requests since it started)."""

    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted: float = 0.0
    accepted_per_pos: list[float] = field(default_factory=list)

    @property
    def mean_acceptance_length(self) -> Optional[float]:
        """vLLM's definition: 1 + accepted / drafts (bonus included; a plain step would be 1)."""
        return 1 + self.accepted / self.drafts if self.drafts else None

    @property
    def draft_acceptance_rate(self) -> Optional[float]:
        return self.accepted / self.draft_tokens if self.draft_tokens else None


@dataclass
class ServerInfo:
    url: str
    model: str
    root: str  # the folder or hub id the server loaded
    max_model_len: Optional[int]
    version: str
    speculative: bool
    k: Optional[int]  # num_speculative_tokens (None without speculation)
    counters: Optional[SpecCounters]
    method: str = NOT_EXPOSED  # from the launcher's record
    draft: str = NOT_EXPOSED
    dtype: str = NOT_EXPOSED
    parallelism: str = NOT_EXPOSED
    speculative_config: Optional[dict] = None  # as the launcher passed it (ngram_replay needs its n-gram sizes)
    pid: Optional[int] = None  # the server's process (group) when the lab's launcher started it

    def describe(self) -> str:
        """One line: model, method, K, dtype, parallelism, version."""
        spec = f"{self.method}, K={self.k}" if self.speculative else "no speculation"
        if self.speculative and self.draft not in (NOT_EXPOSED, ""):
            spec += f", draft {self.draft}"
        return (f"vLLM {self.version} at {self.url}: {self.model} ({self.root}); {spec}; dtype {self.dtype}; "
                f"parallelism {self.parallelism}")


def parse_samples(text: str) -> list[tuple[str, dict, float]]:
    """Prometheus text -> (name, labels, value) for every sample line."""
    samples = []
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if not match or line.startswith("#"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group("labels") or ""))
        try:
            samples.append((match.group("name"), labels, float(match.group("value"))))
        except ValueError:
            continue
    return samples


def spec_counters(text: str, model: Optional[str] = None) -> Optional[SpecCounters]:
    """The spec_decode counters for `model` (summed over engines); None when the server has none."""
    found, counters, per_pos = False, SpecCounters(), {}
    names = {"vllm:spec_decode_num_drafts_total": "drafts", "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
             "vllm:spec_decode_num_accepted_tokens_total": "accepted"}
    for name, labels, value in parse_samples(text):
        if model is not None and labels.get("model_name", model) != model:
            continue
        if name in names:
            found = True
            setattr(counters, names[name], getattr(counters, names[name]) + value)
        elif name == "vllm:spec_decode_num_accepted_tokens_per_pos_total" and labels.get("position", "").isdigit():
            found = True
            pos = int(labels["position"])
            per_pos[pos] = per_pos.get(pos, 0.0) + value
    if not found:
        return None
    counters.accepted_per_pos = [per_pos.get(i, 0.0) for i in range(max(per_pos) + 1)] if per_pos else []
    return counters


def server_info(client: VllmClient, record: Optional[dict] = None) -> ServerInfo:
    """Everything the server's API says about it, completed from the launcher's `record` when given."""
    model = client.resolve_model()
    entry = next(e for e in client.models() if e["id"] == model)
    try:
        version = str(client._json("/version").get("version", "?"))
    except VllmError:
        version = "?"
    counters = spec_counters(client.metrics_text(), model)
    k = len(counters.accepted_per_pos) if counters and counters.accepted_per_pos else None
    info = ServerInfo(url=client.url, model=model, root=str(entry.get("root") or model),
                      max_model_len=entry.get("max_model_len"), version=version, speculative=counters is not None,
                      k=k, counters=counters)
    if record:
        info.method = record.get("method") or "none"
        info.draft = record.get("draft") or ""
        info.dtype = record.get("dtype") or NOT_EXPOSED
        info.speculative_config = record.get("speculative_config")
        info.pid = record.get("pid")
        info.parallelism = (f"tensor parallel {record.get('tensor_parallel_size', 1)} × pipeline parallel "
                            f"{record.get('pipeline_parallel_size', 1)}")
    return info


def require_speculation(info: ServerInfo) -> None:
    """A speculative server is needed (Generate's colouring, the speedup's lead)."""
    if not info.speculative:
        raise VllmError(f"the vLLM server at {info.url} runs without speculative decoding (no spec_decode "
                        f"counters in /metrics): start it with --speculative-config, e.g. `python -m specdec vllm "
                        f"serve --method ngram --k 4`")


def require_baseline(info: ServerInfo) -> None:
    """The baseline of a speedup must be a server without speculation."""
    if info.speculative:
        raise VllmError(f"the baseline server at {info.url} runs speculative decoding (K={info.k}): the baseline "
                        f"must be a server without it (`python -m specdec vllm serve --baseline`)")
