"""Plain records of what the engine did: settings, per-step events, metrics, results.

No tensors live here: every field is an int, float, str, bool, None or a list/dataclass of those,
so renderers, plots, the CLI's JSON and tests can consume events without touching torch.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, Optional

Mode = Literal["greedy", "sampling"]
# How a token emitted by the target got there:
#   "resampled": drawn by the target after a draft token was rejected (greedy: the target's argmax there)
#   "bonus":     drawn from p_{K+1} after every drafted token was accepted
#   "target":    a plain target step: the baseline, or a step where the drafter proposed nothing
FinalKind = Literal["resampled", "bonus", "target"]
StopReason = Literal["eos", "max_new_tokens"]


@dataclass(frozen=True)
class DecodeSettings:
    """Everything that shapes one generation. 0 / None switch a warper off."""

    max_new_tokens: int = 64
    k: int = 4  # draft length (gamma in Leviathan et al.)
    temperature: float = 0.0  # 0 = greedy
    top_k: Optional[int] = None
    top_p: Optional[float] = None
    seed: Optional[int] = 0
    k_schedule: str = "constant"  # how K may change per step: constant | heuristic | confidence | optimal

    @property
    def mode(self) -> Mode:
        return "greedy" if self.temperature == 0 else "sampling"


@dataclass
class TokenProb:
    """One entry of a distribution's top list."""

    token_id: int
    text: str
    prob: float


@dataclass
class DraftToken:
    """One token the draft proposed in a step, and what verification decided."""

    position: int  # 0-based index within this step's draft
    token_id: int
    text: str
    q: float  # draft probability of token_id (warped; greedy: softmax of the raw logits)
    p: float  # target probability of token_id at the same position (same warping)
    accept_prob: float  # min(1, p/q); greedy: 1.0 if it equals the target's argmax else 0.0
    uniform: Optional[float]  # the U(0,1) draw compared with accept_prob (None: greedy, or not evaluated)
    accepted: bool
    evaluated: bool  # False for positions after the first rejection: discarded unchecked
    target_top: list[TokenProb] = field(default_factory=list)  # the target's most probable tokens here (p)
    draft_top: list[TokenProb] = field(default_factory=list)  # the drafter's most probable tokens here (q)

    @property
    def fate(self) -> str:
        """"accepted", "rejected" (the first evaluated mismatch) or "unchecked" (after a rejection)."""
        return "accepted" if self.accepted else ("rejected" if self.evaluated else "unchecked")


@dataclass
class FinalToken:
    """The token the target itself contributes at the end of a step (correction or bonus)."""

    token_id: int
    text: str
    kind: FinalKind
    position: int  # index within the step (== number of accepted draft tokens)
    p: float  # the target's probability of token_id at this position (warped; greedy: softmax of raw logits)
    target_top: list[TokenProb] = field(default_factory=list)  # the target's most probable tokens here
    # norm(max(0, p - q)) at the rejected position; only for "resampled" in sampling mode
    residual_top: Optional[list[TokenProb]] = None


@dataclass
class StepEvent:
    """One draft-then-verify step (or one baseline step: k == 0, no draft)."""

    index: int
    mode: Mode
    k: int  # tokens drafted this step (the schedule's K, shrunk near max_new_tokens or by the drafter)
    drafted: list[DraftToken]
    num_accepted: int
    final: Optional[FinalToken]  # None when EOS or max_new_tokens ended the step before it
    emitted_ids: list[int]  # ids appended to the output by this step, after stop truncation
    emitted_text: str  # their text, as one piece
    draft_time_s: float
    verify_time_s: float
    other_time_s: float  # step wall time not spent drafting or verifying (sampling, bookkeeping)
    finished: bool = False
    stop_reason: Optional[StopReason] = None
    k_planned: int = 0  # the K the schedule asked for this step (k may be smaller)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class MemoryReport:
    device: str
    target_param_bytes: int
    draft_param_bytes: int
    target_kv_bytes: int
    draft_kv_bytes: int
    peak_device_bytes: Optional[int]  # CUDA only
    process_rss_bytes: Optional[int]  # CPU: resident set size of this process


@dataclass
class RunMetrics:
    new_tokens: int
    steps: int
    drafted_tokens: int
    accepted_tokens: int
    acceptance_rate: Optional[float]  # accepted drafted / drafted; None when nothing was drafted
    alpha: Optional[float]  # accepted / evaluated drafted tokens (the theory's per-token acceptance)
    mean_tokens_per_target_forward: float  # bonus/correction included (vanilla decoding = 1.0)
    acceptance_by_position: list[Optional[float]]  # index i: accepted / evaluated-or-not drafted at i
    target_forwards: int
    draft_forwards: int
    wall_time_s: float
    tokens_per_s: float
    draft_time_s: float
    verify_time_s: float
    other_time_s: float
    forward_time_s: float  # time spent inside model forwards (both models)
    engine_efficiency: float  # forward_time_s / wall_time_s
    memory: Optional[MemoryReport] = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RunResult:
    prompt_ids: list[int]
    token_ids: list[int]  # generated ids only
    text: Optional[str]  # None when the model has no tokenizer
    events: list[StepEvent]
    metrics: RunMetrics
    settings: DecodeSettings
    target_name: str = ""
    draft_name: Optional[str] = None  # None: target-only baseline

    def to_dict(self) -> dict:
        return {
            "target": self.target_name,
            "draft": self.draft_name,
            "settings": asdict(self.settings),
            "prompt_ids": self.prompt_ids,
            "token_ids": self.token_ids,
            "text": self.text,
            "steps": [e.to_dict() for e in self.events],
            "metrics": self.metrics.to_dict(),
        }
