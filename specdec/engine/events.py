"""Plain records of what the engine did: settings, per-step events, metrics, results.

No tensors live here: every field is an int, float, str, bool, None or a list/dataclass of those,
so renderers, plots, the CLI's JSON and tests can consume events without touching torch.

The vocabulary, fixed here and used in code, UI labels, docs and exports:
  step        one target forward over the last emitted token and the step's drafts (a plain step: no drafts)
  drafted     proposed by the drafter this step (K of them in a chain; a tree step shows its path, then the
              first rejected child)
  evaluated   compared with the target by the verifier: every drafted token up to and including the first
              rejection (a tree: the children of the root and of kept nodes)
  accepted    evaluated and kept: it is emitted as the drafter proposed it
  rejected    evaluated and not kept: the first evaluated mismatch of a step
  unchecked   drafted after a rejection, never evaluated, discarded (the UI: "discarded unchecked")
  resampled   the target's token after a rejection: drawn from norm(max(0, p - q)) (greedy: the target's argmax)
  bonus       the target's token after every drafted token was accepted: drawn from p at the next position
  target      a plain step's token (the baseline, or a step whose drafter proposed nothing)
  fate        of a drafted token: accepted | rejected | unchecked; of an emitted target token: its kind
  acceptance rate   accepted / drafted;  alpha   accepted / evaluated (the theory's per-token acceptance)
  tokens per target forward   emitted tokens / target decode forwards, resampled and bonus tokens included
                              (plain decoding = 1.00; vLLM's "mean acceptance length")
"""
from __future__ import annotations

import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, Literal, Optional

from specdec.errors import InvalidSettingsError

Mode = Literal["greedy", "sampling"]
# How a token emitted by the target got there: "resampled" | "bonus" | "target" (the vocabulary above)
FinalKind = Literal["resampled", "bonus", "target"]
StopReason = Literal["eos", "max_new_tokens"]
# How K may change per step (schedules.py describes each and builds them)
K_SCHEDULES = ("constant", "heuristic", "confidence", "optimal", "auto")


@dataclass(frozen=True)
class DecodeSettings:
    """Everything that shapes one generation. 0 / None switch a warper off. check_settings says which a
    generation can run."""

    max_new_tokens: int = 64
    k: int = 4  # draft length (gamma in Leviathan et al.)
    temperature: float = 0.0  # 0 = greedy
    top_k: Optional[int] = None
    top_p: Optional[float] = None
    seed: Optional[int] = 0
    k_schedule: str = "constant"  # how K may change per step: one of K_SCHEDULES

    @property
    def mode(self) -> Mode:
        return "greedy" if self.temperature == 0 else "sampling"


def check_settings(settings: DecodeSettings) -> None:
    """Refuses settings no generation can run, every problem named in one InvalidSettingsError: max new tokens
    or K below 1, a negative or non-finite temperature, top-k below 0, top-p outside (0, 1], an unknown K
    schedule. Generation checks them before it loads or runs anything."""
    problems = []
    if settings.max_new_tokens < 1:
        problems.append(f"max_new_tokens must be at least 1 (got {settings.max_new_tokens})")
    if settings.k < 1:
        problems.append(f"K must be at least 1 (got {settings.k})")
    if not 0 <= settings.temperature < float("inf"):  # also refuses nan
        problems.append(f"temperature must be 0 (greedy) or a positive finite number (got {settings.temperature})")
    if settings.top_k is not None and settings.top_k < 0:
        problems.append(f"top-k must be 0 (off) or positive (got {settings.top_k})")
    if settings.top_p is not None and not 0 < settings.top_p <= 1:
        problems.append(f"top-p must be in (0, 1] (got {settings.top_p})")
    if settings.k_schedule not in K_SCHEDULES:
        problems.append(f"K schedule must be one of {', '.join(K_SCHEDULES)} (got {settings.k_schedule!r})")
    if problems:
        raise InvalidSettingsError("; ".join(problems))


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
    accept_prob: float  # min(1, p/q); greedy: 1.0 if it equals the target's argmax else 0.0; sampled tree
    # steps: min(1, r/q) with r and q as earlier rejected siblings left them (verify.verify_tree_sampled)
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
    """The token the target itself contributes at the end of a step (resampled or bonus)."""

    token_id: int
    text: str
    kind: FinalKind
    position: int  # index within the step (== number of accepted draft tokens)
    p: float  # the target's probability of token_id at this position (warped; greedy: softmax of raw logits)
    target_top: list[TokenProb] = field(default_factory=list)  # the target's most probable tokens here
    # norm(max(0, p - q)) at the rejected position; only for "resampled" in sampling mode
    residual_top: Optional[list[TokenProb]] = None


@dataclass
class TreeNode:
    """One node of a tree step's draft (tree.py), in the tree's order: parents before children."""

    token_id: int
    text: str
    parent: int  # index of the parent node, -1 for the root (the last emitted token)
    kept: bool  # on the accepted path
    evaluated: bool = True  # compared by the verifier (greedy: a child of the root or of a kept node; sampling: tried)


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
    tree: list[TreeNode] = field(default_factory=list)  # a tree step (tree.py): every node; `drafted` is the chain shown
    # the auto schedule's decision before this step (schedules.AutoSchedule; "" under other schedules):
    #   "speculate": draft at the best K; "off": a plain target step (speculation predicted not to pay);
    #   "probe": one K = 1 step while off, to keep measuring alpha
    decision: str = ""
    decision_why: str = ""  # the figures behind it: best K, predicted speedup = E / cost, alpha
    predicted_speedup: Optional[float] = None  # of speculating at the best K, when the decision was made

    @property
    def tree_nodes(self) -> int:
        """Tokens the target scored beyond the root in a tree step (0: a chain step)."""
        return len(self.tree)

    def to_dict(self) -> dict:
        return asdict(self)


PEAK_CUDA = "cuda allocator"  # torch's allocator statistics: exact for tensors
PEAK_CPU = "cpu peak RSS (coarse)"  # the process's resident memory: see MemoryReport


@dataclass
class MemoryReport:
    """The memory of one run, in bytes: the vocabulary the engine, UI, CSV, JSON and docs all use.

    Counted exactly, from the tensors themselves:
      target weights      target_param_bytes (target_weights: which weights they are, in words: LoadedModel.weights_label)
      draft weights       draft_param_bytes: what the drafter adds to the target (tensors it shares with
                          the target are not counted): a draft model's weights, Medusa/EAGLE heads with their
                          head rows, an early exit's adapter; prompt lookup: 0
      target KV cache     target_kv_bytes: the target runner's cache as allocated at the run's end
      draft KV cache      draft_kv_bytes: the drafter's own per-sequence state (Drafter.state_bytes): a draft
                          model's KV cache, the EAGLE head's cache, Medusa's last feature, the heads' rows of their
                          text's ids outside the draft vocabulary; prompt lookup: 0
      verification slots  verify_kv_bytes: the target KV room that verifying K drafts + 1 needs beyond the
                          run's own tokens, K x the target's KV bytes per position (a tree drafter's: N nodes
                          when N > K; from its config; 0 for a target-only run; None when the config does not
                          give the cache's shape)
      extra memory        extra_bytes = draft weights + draft KV cache + verification slots: what speculative
                          decoding adds to decoding with the target alone
    Measured, where counting cannot reach (activations, allocator overheads):
      peak_delta_bytes    the run's peak over what was in use when it started (weights loaded before the run
                          are not in it; its caches, drafter state and transient activations, such as the
                          K+1 verification logits, are). peak_source says how it was measured: PEAK_CUDA
                          (torch's allocator statistics, reset at the run's start), or PEAK_CPU: the
                          process's peak resident set size over its RSS at the start, coarse (the allocator
                          keeps freed pages, so a run after a larger one can show 0; page granularity;
                          runs that overlap, as in the Race tab, share one peak). None: not measurable here
      peak_device_bytes   CUDA: the allocator's absolute peak during the run
      process_rss_bytes   the process's resident set size at the run's end
    """

    device: str
    target_param_bytes: int
    draft_param_bytes: int
    target_kv_bytes: int
    draft_kv_bytes: int
    peak_device_bytes: Optional[int]  # CUDA only
    process_rss_bytes: Optional[int]  # CPU: resident set size of this process
    verify_kv_bytes: Optional[int] = None
    peak_delta_bytes: Optional[int] = None
    peak_source: Optional[str] = None  # PEAK_CUDA | PEAK_CPU | None
    target_weights: str = ""  # which weights the target ran: "Q4_1 as published", "float16 from Q4_1", "float32", …
    extra_bytes: int = field(init=False)

    def __post_init__(self):
        self.extra_bytes = self.draft_param_bytes + self.draft_kv_bytes + (self.verify_kv_bytes or 0)

    @property
    def peak_is_coarse(self) -> bool:
        return self.peak_source == PEAK_CPU


@dataclass(frozen=True)
class RunMetrics:
    """The one record of a run's figures: final (metrics.summarize: the engine's counters, prefill included in
    its time) or so far (theory.live_metrics: from the events streamed until now). Counts and times are stored;
    the ratios below are derived here and nowhere else."""

    new_tokens: int
    steps: int
    drafted_tokens: int
    accepted_tokens: int
    alpha: Optional[float]  # accepted / evaluated drafted tokens (the theory's per-token acceptance)
    acceptance_by_position: list[Optional[float]]  # index i: accepted / drafted at position i
    target_forwards: int  # decoding forwards (a step is one; the prompt's prefill is not counted)
    wall_time_s: float  # engine time; time the consumer (UI) spends between steps is never included
    draft_time_s: float = 0.0
    verify_time_s: float = 0.0
    other_time_s: float = 0.0
    draft_forwards: Optional[int] = None  # None: not known (a run so far; a vLLM server)
    forward_time_s: Optional[float] = None  # time spent inside model forwards (both models); None: not known
    memory: Optional[MemoryReport] = None

    @property
    def acceptance_rate(self) -> Optional[float]:
        """Accepted / drafted tokens (unchecked positions after a rejection count as drafted)."""
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else None

    @property
    def tokens_per_forward(self) -> Optional[float]:
        """Tokens emitted per target forward, bonus / resampled tokens included (plain decoding = 1.0)."""
        return self.new_tokens / self.target_forwards if self.target_forwards else None

    @property
    def tokens_per_s(self) -> Optional[float]:
        return self.new_tokens / self.wall_time_s if self.wall_time_s > 0 else None

    @property
    def engine_efficiency(self) -> Optional[float]:
        """Share of the engine time spent inside model forwards."""
        if self.forward_time_s is None or self.wall_time_s <= 0:
            return None
        return self.forward_time_s / self.wall_time_s

    def to_dict(self) -> dict:
        return {**asdict(self), "acceptance_rate": self.acceptance_rate, "tokens_per_forward": self.tokens_per_forward,
                "tokens_per_s": self.tokens_per_s, "engine_efficiency": self.engine_efficiency}


@dataclass
class RunResult:
    prompt_ids: list[int]
    token_ids: list[int]  # generated ids only
    text: Optional[str]  # None when the model has no tokenizer
    events: list[StepEvent]
    metrics: RunMetrics
    settings: DecodeSettings  # as the run ran them: k_schedule is the schedule that chose each step's K (a planned
    # run's "auto", whatever was asked; a test's unnamed schedule leaves the asked one)
    target_name: str = ""
    draft_name: Optional[str] = None  # None: target-only baseline; "auto": planned (its choice in `auto`)
    auto: Optional[dict] = None  # the `auto` plan's choice: planning.choice.AutoChoice.to_dict()
    draft_family: Optional[str] = None  # the family of the drafter that drafted (auto's pick for a planned run)
    learned: Any = None  # a drafter that learns across requests: what it had learnt as the run started
    # (drafters.base.LearnedState: earlier requests, tokens, fingerprint); None for every other drafter

    @property
    def drafted_by(self) -> Optional[str]:
        """The drafter that drafted: the draft's name, or the drafter `auto` picked for a planned run."""
        if self.auto:
            return self.auto.get("drafter") or self.draft_name
        return self.draft_name

    @property
    def k_schedule(self) -> str:
        """The K schedule that ran."""
        return self.settings.k_schedule

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
            "auto": self.auto,
            "draft_family": self.draft_family,
            "learned": self.learned.to_dict() if hasattr(self.learned, "to_dict") else self.learned,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "RunResult":
        """The run again from its to_dict() form (a run kept in the browser's storage, an export read back); a
        learnt state comes back as its figures (a dict), enough to show, not to replay."""
        return cls(prompt_ids=list(data["prompt_ids"]), token_ids=list(data["token_ids"]), text=data.get("text"),
                   events=[from_plain(StepEvent, step) for step in data["steps"]],
                   metrics=from_plain(RunMetrics, data["metrics"]), settings=from_plain(DecodeSettings, data["settings"]),
                   target_name=data.get("target", ""), draft_name=data.get("draft"), auto=data.get("auto"),
                   draft_family=data.get("draft_family"), learned=data.get("learned"))


def from_plain(cls, data: dict):
    """A record of this module (one of the dataclasses above) rebuilt from its asdict() / to_dict() form; keys it does
    not have (a to_dict's derived figures) are left out."""
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _plain_value(hints[f.name], data[f.name]) for f in fields(cls)
                  if f.init and f.name in data})


def _plain_value(hint, value):
    """`value` as the type `hint` says: nested records rebuilt, lists item by item, anything else as it is."""
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return _plain_value(next(a for a in args if a is not type(None)), value)
    if origin is list and args:
        return [_plain_value(args[0], item) for item in value]
    if is_dataclass(hint):
        return from_plain(hint, value)
    return value
