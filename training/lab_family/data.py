"""Token streams and a seeded window sampler that mixes code and prose."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tokenizers import Tokenizer


def encode_documents(tok: Tokenizer, docs: list[str], eos: int) -> np.ndarray:
    """All documents as one stream, each followed by the EOS token."""
    pieces = []
    for enc in tok.encode_batch(docs):
        pieces.append(np.asarray(enc.ids, dtype=np.int32))
        pieces.append(np.asarray([eos], dtype=np.int32))
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)


@dataclass
class WindowSampler:
    """Random (seeded) windows of ``seq_len + 1`` tokens; each row picks code or prose first."""

    streams: tuple[np.ndarray, ...]
    weights: tuple[float, ...]
    batch: int
    seq_len: int
    seed: int

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        for stream in self.streams:
            if len(stream) <= self.seq_len + 1:
                raise ValueError(f"a token stream of {len(stream)} tokens is shorter than one window")

    def next_batch(self) -> torch.Tensor:
        sources = self.rng.choice(len(self.streams), size=self.batch, p=np.asarray(self.weights))
        rows = []
        for source in sources:
            stream = self.streams[source]
            start = int(self.rng.integers(0, len(stream) - self.seq_len - 1))
            rows.append(stream[start:start + self.seq_len + 1])
        return torch.from_numpy(np.stack(rows).astype(np.int64))


def heldout_windows(stream: np.ndarray, seq_len: int, max_windows: int) -> torch.Tensor:
    """Evenly spaced, non-overlapping windows of ``seq_len + 1`` tokens from a held-out stream."""
    width = seq_len + 1
    available = len(stream) // width
    count = min(available, max_windows)
    if count == 0:
        raise ValueError("held-out stream is shorter than one window")
    stride = available // count
    rows = [stream[i * stride * width:(i * stride + 1) * width] for i in range(count)]
    return torch.from_numpy(np.stack(rows).astype(np.int64))
