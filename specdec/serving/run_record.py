"""The record of one run, made by the run itself: what was asked (the request), what ran (the engine's RunResult:
the drafter that drafted and its family, the K each step drafted and the schedule that chose it, `auto`'s choice
and its reason, what a drafter that learns across requests had learnt), where it ran, and the measurement of it
(the timed pairs and the policy that ended them). Every view of a run (verdict, cards, plots, steps table,
inspector, replay, exports, report, the class board, the tour's records) renders from a RunRecord; none reads a
widget to say what ran. Plain data: no gradio, no torch."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Optional

from specdec.engine.events import DecodeSettings, RunResult, from_plain
from specdec.engine.theory import measured_alpha
from specdec.measure.speedup import Estimate, Policy
from specdec.serving.request import RunRequest

STORE_VERSION = 1  # to_store's shape; a browser's entry of another version is not read


@dataclass
class RunRecord:
    request: RunRequest
    prompt_text: str  # the prompt as tokenised (after the whitespace clean-up, when asked)
    result: Any  # the engine's RunResult (a stopped run: what it produced until Stop)
    engine: str = "lab"  # "lab" | "vllm"
    compute: str = ""  # how the target ran, in one line: the lab's path, or the vLLM server
    path: Any = None  # the lab's measured path for the target (runners.tuning.TunedPath; None: explicit or a server)
    estimate: Optional[Estimate] = None  # the measurement of this run, once it has begun
    policy: Optional[Policy] = None  # the rule that ends the measurement's timed pairs
    baseline: Any = None  # the latest timed target-only RunResult
    measured: Any = None  # the latest timed speculative RunResult
    stopped: bool = False
    shared_note: str = ""  # a run made once for several identical requests says so
    vllm: Any = None  # a run on a vLLM server: the UI's view of its record (p, q and the draws are not known)
    exports: list = field(default_factory=list)  # the files written for it (the UI's download box)
    at: float = field(default_factory=time.time)  # when it was made (wall clock)

    # --- what ran, read from the run ------------------------------------------------------------------------------
    @property
    def events(self) -> list:
        return self.result.events

    @property
    def settings(self):
        """The settings that ran (the schedule that chose K included)."""
        return self.result.settings

    @property
    def k_schedule(self) -> str:
        return self.result.settings.k_schedule

    @property
    def ks(self) -> list[int]:
        """The K each step drafted (0: a plain target step)."""
        return [event.k for event in self.events]

    @property
    def draft(self) -> Optional[str]:
        """The draft as run: a drafter's name, `auto`, a model's name; None for the target alone."""
        return self.result.draft_name

    @property
    def drafted_by(self) -> Optional[str]:
        return self.result.drafted_by

    @property
    def family(self) -> Optional[str]:
        return self.result.draft_family

    @property
    def plan(self) -> Optional[dict]:
        """`auto`'s choice and its reason (None: not a planned run)."""
        return self.result.auto

    @property
    def learned(self):
        return self.result.learned

    @property
    def exercise(self) -> Optional[str]:
        return self.request.exercise

    @property
    def measured_ok(self) -> bool:
        """A finished measurement with a figure: not stopped before it ended, not a fault."""
        est = self.estimate
        return est is not None and bool(est.repeats) and est.state in ("done", "budget") and est.fault is None

    def k_words(self) -> str:
        """The K the schedule chose for the steps that drafted, in a few words: 'K = 4', 'K 1–4 (auto schedule)', 'no
        drafts' (a step near max new tokens drafting fewer than its K is not counted as another K)."""
        drafted = [e.k_planned or e.k for e in self.events if e.k > 0]
        if not drafted:
            return "no drafts"
        low, high = min(drafted), max(drafted)
        span = f"K = {low}" if low == high else f"K {low}–{high}"
        return span if self.k_schedule == "constant" else f"{span} ({self.k_schedule} schedule)"

    def ran_words(self) -> str:
        """Which models and drafter ran: 'Ran smollm2-135m-instruct with auto → smollm2-135m-eagle3 (EAGLE-3), …'."""
        if self.draft is None:
            return f"Ran {self.result.target_name} alone."
        drafter = self.draft if self.drafted_by in (None, self.draft) else f"{self.draft} → {self.drafted_by}"
        family = f" ({self.family})" if self.family else ""
        return f"Ran {self.result.target_name} with {drafter}{family}, {self.k_words()}."

    # --- kept in the person's own browser (the app's page reload shows it again) ----------------------------------
    def to_store(self) -> dict:
        """The record as plain JSON for the browser's storage: the request (its prompt text too: it goes back to the
        browser that typed it, never to a server-side store), the run, the timed pair shown in the plots and the
        measurement. A vLLM run is not kept (its server's record is not the lab's)."""
        return {"version": STORE_VERSION, "request": {**self.request.to_dict(), "prompt": self.request.prompt,
                                                      "settings": asdict(self.request.settings)},
                "prompt_text": self.prompt_text, "result": self.result.to_dict(), "engine": self.engine,
                "compute": self.compute, "stopped": self.stopped, "shared_note": self.shared_note, "at": self.at,
                "estimate": None if self.estimate is None else asdict(self.estimate),
                "baseline": None if self.baseline is None else self.baseline.to_dict(),
                "measured": None if self.measured is None else self.measured.to_dict()}

    @classmethod
    def from_store(cls, data) -> Optional["RunRecord"]:
        """The record a browser kept (to_store), or None for anything else: another version, an edited or partial
        entry. Enough to show every view of the run again; a restored run is not measured again."""
        try:
            if data.get("version") != STORE_VERSION:
                return None
            asked = dict(data["request"])
            request = RunRequest(**{**asked, "settings": from_plain(DecodeSettings, asked["settings"])})
            known = {f.name for f in fields(Estimate)}
            runs = {name: RunResult.from_dict(data[name]) if data.get(name) else None
                    for name in ("result", "baseline", "measured")}
            return cls(request, str(data["prompt_text"]), runs["result"], engine=str(data["engine"]),
                       compute=str(data.get("compute", "")), stopped=bool(data.get("stopped")),
                       shared_note=str(data.get("shared_note", "")), at=float(data.get("at", 0.0)),
                       estimate=Estimate(**{k: v for k, v in data["estimate"].items() if k in known})
                       if data.get("estimate") else None, baseline=runs["baseline"], measured=runs["measured"])
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    # --- exports -----------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The run's JSON export: the request, the run (RunResult.to_dict: the settings that ran, every step, the
        metrics, auto's plan, the drafter's family and learnt state), α, the speedup measured (its interval, fault and
        the policy that ended its timed pairs). Each
        fact once: the schedule that ran is in `settings`, what was asked in `request`."""
        est = self.estimate
        return {
            "request": self.request.to_dict(),
            **self.result.to_dict(),
            "engine": self.engine,
            "compute": self.compute,
            "k_per_step": self.ks,
            "alpha": measured_alpha(self.events),
            "stopped": self.stopped,
            "speedup": None if est is None else {
                **est.to_dict(), "policy": asdict(self.policy) if self.policy is not None else None},
        }
