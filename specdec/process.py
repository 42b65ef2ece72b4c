"""The one process-wide set-up every entry point shares: the CLI (`python -m specdec`), the app (app.py), the
scripts and the Python API all import the `specdec` package, whose first statement calls configure_process().

What it sets must be in place before torch starts its OpenMP thread pool, which reads OMP_WAIT_POLICY once,
when `import torch` loads the runtime:

- OMP_WAIT_POLICY=PASSIVE (unless the operator set a policy): OpenMP threads sleep between parallel regions
  instead of spinning. On a CPU shared with other processes (a Space, a busy laptop, CI) spinning threads
  stall every step many times over while the other processes are busy (docs/engine.md, "CPU", has the
  measurement). Passive threads pay a wake-up per region instead, which is why the thread count of a step is part of
  the measured `auto` path (tuning.py), not a rule.

This module imports neither torch nor anything that does. When torch was imported before `specdec` (a Python
session that imported torch first, or a test runner), the policy can no longer take effect: the set-up then
changes nothing and records why (`describe_process()["applied"]`), and the measured path's key carries the
policy actually in force, so a measurement made under one policy is never reused under another.
"""
from __future__ import annotations

import os
import sys

WAIT_POLICY = "PASSIVE"
_STATE: dict = {}


def configure_process() -> dict:
    """Set the process-wide environment once (idempotent); returns describe_process()."""
    if not _STATE:
        torch_loaded = "torch" in sys.modules
        operator_policy = os.environ.get("OMP_WAIT_POLICY", "").strip()
        if not torch_loaded and not operator_policy:
            os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
        _STATE.update(
            omp_wait_policy=effective_wait_policy(torch_loaded, operator_policy),
            applied=not torch_loaded,
            reason=("torch was imported before specdec: the OpenMP wait policy in force is the one it started with"
                    if torch_loaded else
                    "set by the operator (OMP_WAIT_POLICY)" if operator_policy else
                    "set by specdec before torch started its thread pool"),
        )
    return describe_process()


def effective_wait_policy(torch_loaded: bool, operator_policy: str) -> str:
    """The policy the OpenMP runtime runs under: the operator's, ours, or (torch loaded first) whatever the
    environment held then; OpenMP's default (active spinning for a while, then sleeping) when unset."""
    if operator_policy:
        return operator_policy.upper()
    return "default" if torch_loaded else WAIT_POLICY


def describe_process() -> dict:
    """What the set-up decided: {"omp_wait_policy", "applied", "reason"} (empty before configure_process)."""
    return dict(_STATE)

