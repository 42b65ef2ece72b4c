"""A context-dependent random 'model' whose next-token logits come from a table indexed by the
last two tokens. It implements the engine's model interface (new_runner -> prefill/forward/
rollback) so tens of thousands of sampled generations take seconds, and its exact distribution
over sequences can be enumerated.

TableModel.chain builds a deterministic one (every row one-hot, -inf elsewhere, in greedy and
sampling mode alike) for tests that need to place a token, such as EOS, at an exact position."""
from __future__ import annotations

import torch


class TableModel:
    tokenizer = None
    eos_token_ids: tuple = ()
    device = torch.device("cpu")
    param_bytes = 0

    def __init__(self, name: str, logits_table: torch.Tensor, eos_token_ids: tuple = ()):
        self.name = name
        self.table = logits_table  # [V, V, V]: (token before last, last token) -> logits
        self.embedding_rows = self.real_vocab_size = logits_table.shape[-1]
        self.eos_token_ids = tuple(eos_token_ids)

    @classmethod
    def random(cls, name: str, vocab: int, seed: int, scale: float = 2.0) -> "TableModel":
        generator = torch.Generator().manual_seed(seed)
        return cls(name, torch.randn(vocab, vocab, vocab, generator=generator) * scale)

    @classmethod
    def chain(cls, name: str, vocab: int, successor: dict[int, int], eos_token_ids: tuple = ()) -> "TableModel":
        """After token t (whatever came before it) the only possible token is successor[t]
        (t + 1 mod vocab where successor does not say)."""
        table = torch.full((vocab, vocab, vocab), float("-inf"))
        for last in range(vocab):
            table[:, last, successor.get(last, (last + 1) % vocab)] = 0.0
        return cls(name, table, eos_token_ids)

    def perturbed(self, name: str, noise: float, seed: int) -> "TableModel":
        generator = torch.Generator().manual_seed(seed)
        return TableModel(name, self.table + torch.randn(self.table.shape, generator=generator) * noise,
                          self.eos_token_ids)

    def with_eos(self, *eos_token_ids: int) -> "TableModel":
        return TableModel(self.name, self.table, eos_token_ids)

    def next_logits(self, seq: list[int]) -> torch.Tensor:
        before = seq[-2] if len(seq) > 1 else 0
        return self.table[before, seq[-1]]

    def new_runner(self, vocab_limit: int, max_length: int, keep_hidden: bool = False) -> "TableRunner":
        return TableRunner(self)

    def token_text(self, token_id: int) -> str:
        return f"<{token_id}>"

    def decode(self, ids):
        return None


class TableRunner:
    def __init__(self, model: TableModel):
        self.model = model
        self.seq: list[int] = []
        self.forward_calls = 0
        self.forward_time_s = 0.0

    @property
    def length(self) -> int:
        return len(self.seq)

    def prefill(self, ids):
        self.seq += ids
        return self.model.next_logits(self.seq) if ids else None

    def forward(self, ids):
        self.forward_calls += 1
        rows = []
        for token in ids:
            self.seq.append(token)
            rows.append(self.model.next_logits(self.seq))
        return torch.stack(rows)

    def rollback(self, length: int) -> None:
        del self.seq[length:]

    def kv_bytes(self) -> int:
        return 0
