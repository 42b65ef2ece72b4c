"""What the tour remembers for one learner: the exercise loaded last, each exercise's prediction and recorded
run, the Is it exact? checks and which answers were revealed; and the same as a plain JSON dict for the
browser's storage (gr.BrowserState), so a page reload keeps the learner's runs and predictions.

Reading a stored dict never raises: whatever does not have the expected shape (an older version, an edited
entry) is left out.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Optional

from specdec.engine.theory import measured_alpha
from specdec.ui.exercises import find_exercise
from specdec.ui.session import RunView

STORE_VERSION = 1
STORE_KEY = "specdec-tour"  # the browser's localStorage key
# Not a protection: the stored values are the learner's own predictions and figures. A fixed key keeps them
# readable after the app restarts (gr.BrowserState draws a new one per process otherwise).
STORE_SECRET = "specdec-tour-v1"


@dataclass(frozen=True)
class Observation:
    """What one finished run showed, as the tour quotes it."""

    acceptance_rate: Optional[float]  # accepted / drafted
    alpha: Optional[float]  # accepted / evaluated
    tokens_per_forward: Optional[float]
    speedup: Optional[str]  # Estimate.describe(), None when not measured
    verdict: Optional[str]


@dataclass(frozen=True)
class Prediction:
    text: str
    before_run: bool  # written before the exercise had a recorded run


@dataclass
class TourState:
    current: Optional[str] = None  # the key of the exercise loaded last
    observations: dict = field(default_factory=dict)  # exercise key -> Observation of its own run
    checks: dict = field(default_factory=dict)  # verifier name -> what its last "Is it exact?" check gave
    predictions: dict = field(default_factory=dict)  # exercise key -> Prediction
    revealed: set = field(default_factory=set)  # keys of the exercises whose answer was revealed

    def done(self, key: str) -> bool:
        """An exercise counts as done once its answer was revealed."""
        return key in self.revealed


def observation_of(view: RunView) -> Observation:
    stats = view.result.metrics
    estimate = view.estimate if view.estimate is not None and view.estimate.ratio is not None else None
    return Observation(stats.acceptance_rate, measured_alpha(view.events), stats.tokens_per_forward,
                       estimate.describe() if estimate else None, estimate.verdict if estimate else None)


def describe_observation(obs: Observation) -> str:
    parts = [("no drafted tokens" if obs.acceptance_rate is None
              else f"acceptance rate **{obs.acceptance_rate:.0%}** (accepted / drafted)")]
    if obs.alpha is not None:
        parts.append(f"α = {obs.alpha:.2f} (accepted / evaluated)")
    if obs.tokens_per_forward is not None:
        parts.append(f"{obs.tokens_per_forward:.2f} tokens per target forward")
    if obs.speedup is None:
        parts.append("no speedup measured (the run was stopped, or is still measuring)")
    else:
        parts.append(f"measured speedup **{obs.speedup}**" + (f": {obs.verdict}" if obs.verdict else ""))
    return ", ".join(parts)


# --- the browser's copy ----------------------------------------------------------------------------------

def to_store(tour: TourState) -> dict:
    """The learner's records as JSON for localStorage (the current exercise travels in the page's link)."""
    return {"version": STORE_VERSION, "observations": {k: asdict(o) for k, o in tour.observations.items()},
            "predictions": {k: asdict(p) for k, p in tour.predictions.items()},
            "checks": dict(tour.checks), "revealed": sorted(tour.revealed)}


def _numbers_or_none(*values) -> bool:
    return all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values)


def _texts_or_none(*values) -> bool:
    return all(v is None or isinstance(v, str) for v in values)


WELL_FORMED = {  # the value types each stored record must have
    Observation: lambda v: _numbers_or_none(v["acceptance_rate"], v["alpha"], v["tokens_per_forward"])
    and _texts_or_none(v["speedup"], v["verdict"]),
    Prediction: lambda v: isinstance(v["text"], str) and isinstance(v["before_run"], bool),
}


def _records(stored: dict, name: str, kind) -> dict:
    """{exercise key: kind(...)} from stored[name], keeping only well-formed entries of known exercises."""
    entries, names = stored.get(name), {f.name for f in fields(kind)}
    kept = {}
    for key, value in (entries.items() if isinstance(entries, dict) else ()):
        if (find_exercise(key) is not None and isinstance(value, dict) and set(value) == names
                and WELL_FORMED[kind](value)):
            kept[key] = kind(**value)
    return kept


def from_store(stored) -> TourState:
    """A TourState from what the browser kept (an empty one for anything unreadable)."""
    if not isinstance(stored, dict) or stored.get("version") != STORE_VERSION:
        return TourState()
    checks = stored.get("checks")
    revealed = stored.get("revealed")
    return TourState(observations=_records(stored, "observations", Observation),
                     predictions=_records(stored, "predictions", Prediction),
                     checks={str(k): str(v) for k, v in checks.items()} if isinstance(checks, dict) else {},
                     revealed={k for k in revealed if isinstance(k, str) and find_exercise(k)}
                     if isinstance(revealed, list) else set())
