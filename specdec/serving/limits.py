"""Limits on what one request may ask for, and the checks that turn bad input into one clear line.

Two kinds of bound live here:
  - sanity bounds that hold everywhere (CLI and app): finite numbers, K, seeds, sample counts, prompt
    text that is valid Unicode;
  - deployment limits for the web app (`Limits`): queue length, max new tokens, sweep size, timed
    repeats, a per-run time budget, prompt size, sessions kept, model memory. A public deployment (a
    Hugging Face Space, or SPECDEC_PUBLIC=1) gets tighter defaults; every one can be set by an
    environment variable (ENVIRONMENT; what each accepts: specdec/config.py; docs/deploy.md lists them).

Engine-side: imports neither gradio nor torch.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from typing import Mapping, Optional

from specdec import config
from specdec.errors import InvalidSettingsError

# --- sanity bounds (CLI and app) -------------------------------------------------------------------

K_MAX = 64  # the app's slider stops at 16; the CLI allows more, never an absurd cache
TEMPERATURE_MAX = 100.0  # beyond this every distribution is uniform to float precision
SEED_MAX = 2**32 - 1  # the app's seed field and numpy agree on this range
NUM_SAMPLES_MAX = 10_000  # CLI --num-samples: independent draws in one process
MODEL_NAME_MAX_CHARS = 300


def check_finite(name: str, value, low: float | None = None, high: float | None = None) -> float:
    """A real, finite number within [low, high]; the message says which setting and what is allowed."""
    allowed = _range_text(low, high)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidSettingsError(f"{name} must be a number{allowed} (got {value!r})")
    if not math.isfinite(value):
        raise InvalidSettingsError(f"{name} must be a finite number{allowed} (got {value})")
    if (low is not None and value < low) or (high is not None and value > high):
        raise InvalidSettingsError(f"{name} must be{allowed} (got {show(value)})")
    return value


def check_integer(name: str, value, low: int | None = None, high: int | None = None) -> int:
    """A whole number within [low, high] (floats like 4.0 pass; 4.5 and nan do not)."""
    check_finite(name, value, low, high)
    if value != int(value):
        raise InvalidSettingsError(f"{name} must be a whole number{_range_text(low, high)} (got {show(value)})")
    return int(value)


def show(x) -> str:
    """A number as a person would write it: 4294967295, 0.7, 1e+300, nan (very long integers cut)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)
    text = str(x) if isinstance(x, int) else f"{x:g}"
    return text if len(text) <= 24 else f"{text[:10]}…({len(text)} digits)"


def _range_text(low, high) -> str:
    if low is not None and high is not None:
        return f" from {show(low)} to {show(high)}"
    if low is not None:
        return f" of at least {show(low)}"
    if high is not None:
        return f" of at most {show(high)}"
    return ""


def check_prompt_text(text, max_chars: int | None = None, what: str = "The prompt") -> str:
    """Text the tokenizers can take: a string, valid Unicode (no unpaired surrogates, which is what
    invalid UTF-8 bytes on a command line become), at most max_chars characters. Emoji, right-to-left
    text and control characters are valid and pass unchanged."""
    if not isinstance(text, str):
        raise InvalidSettingsError(f"{what} must be text (got {type(text).__name__})")
    if max_chars is not None and len(text) > max_chars:
        raise InvalidSettingsError(f"{what} is {len(text):,} characters; this deployment accepts at most "
                                   f"{max_chars:,}: shorten it")
    bad = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:
        code = ord(text[bad])
        if 0xDC80 <= code <= 0xDCFF:  # how Python keeps a byte that is not UTF-8 (surrogateescape)
            raise InvalidSettingsError(f"{what} is not valid UTF-8 (byte 0x{code - 0xDC00:02x} at character "
                                       f"{bad + 1}): save or paste it as UTF-8 text")
        raise InvalidSettingsError(f"{what} contains an unpaired surrogate (U+{code:04X} at character {bad + 1}), "
                                   "which is not valid text: paste it again as plain text")
    return text


def check_model_name(name, what: str = "Model name") -> str:
    if name is None:
        return ""
    if not isinstance(name, str):
        raise InvalidSettingsError(f"{what} must be text (got {type(name).__name__})")
    if len(name) > MODEL_NAME_MAX_CHARS:
        raise InvalidSettingsError(f"{what} is {len(name)} characters long; a model name or path has at most "
                                   f"{MODEL_NAME_MAX_CHARS}")
    return check_prompt_text(name, what=what)


# --- deployment limits (the web app) ----------------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """What one request to the app may ask for. None switches a limit off."""

    queue_size: Optional[int] = None  # requests waiting in the queue; more are turned away ("queue is full")
    max_new_tokens: int = 512  # per run: Generate, Race and every sweep run
    max_sweep_points: int = 256  # drafts x K values x temperatures in one sweep
    max_repeats: int = 40  # timed repeats (paired draws) per speedup measurement
    run_budget_s: Optional[float] = None  # a Generate/Race/Sweep run stops with a message after this
    max_prompt_chars: int = 100_000
    sessions: int = 10_000  # browser sessions whose state is kept in memory (oldest dropped)
    model_cache_gb: Optional[float] = None  # loaded models kept in memory; None: automatic (loading.py)


LOCAL = Limits()
# sized for a class of 30 on one Space: each student's Run is one queued request and its follow-up (the inspector),
# and Generate runs many at once (wiring.CLASS_LANES), so 30 students at the same moment never fill the queue
PUBLIC = Limits(queue_size=64, max_new_tokens=256, max_sweep_points=48, max_repeats=12, run_budget_s=120.0,
                max_prompt_chars=8_000, sessions=64, model_cache_gb=None)

ENVIRONMENT = {  # field -> its variable (what each accepts: specdec/config.py)
    "queue_size": "SPECDEC_QUEUE_SIZE",
    "max_new_tokens": "SPECDEC_MAX_NEW_TOKENS",
    "max_sweep_points": "SPECDEC_MAX_SWEEP_POINTS",
    "max_repeats": "SPECDEC_MAX_REPEATS",
    "run_budget_s": "SPECDEC_RUN_BUDGET_S",
    "max_prompt_chars": "SPECDEC_MAX_PROMPT_CHARS",
    "sessions": "SPECDEC_SESSIONS",
    "model_cache_gb": "SPECDEC_MODEL_CACHE_GB",
}


def public_by_rule(env: Mapping[str, str], flag: Optional[bool] = None) -> bool:
    """The one rule for a deployment's being public: the operator's --public / --no-public flag when given, else
    SPECDEC_PUBLIC (1 or 0), else whether this is a Hugging Face Space (SPACE_ID set)."""
    if flag is not None:
        return bool(flag)
    public = config.get("SPECDEC_PUBLIC", env)
    return bool(env.get("SPACE_ID")) if public is None else public


def is_public() -> bool:
    """Whether this process serves a public deployment: as the app was launched (configure), else by the rule on
    the environment. Everything a visitor could type that the server acts on asks this: vLLM server URLs, model
    folders and Hub ids, the suffix drafter's store shared across sessions."""
    return _public if _public is not None else public_by_rule(os.environ)


def limits_from_env(env: Mapping[str, str], public: bool | None = None) -> Limits:
    """The defaults for this kind of deployment, each overridden by its SPECDEC_* variable."""
    base = PUBLIC if public_by_rule(env, public) else LOCAL
    changes = {name: config.get(variable, env) for name, variable in ENVIRONMENT.items()
               if config.is_set(variable, env)}
    return replace(base, **changes)


def parse_limit(name: str, text: str, source: str):
    """One limit from text (a flag's), read as its variable is; a bad value is one line naming source."""
    return config.parse(ENVIRONMENT[name], text, source)


def describe(limits: Limits) -> str:
    """One line for the log: every limit and its value."""
    return ", ".join(f"{f.name}={getattr(limits, f.name)}" for f in fields(limits))


_current = LOCAL
_public: Optional[bool] = None  # the running app's deployment (configure); None: the rule on the environment


def configure(limits: Limits, public: Optional[bool] = None) -> Limits:
    """Sets the process-wide limits the app's callbacks check and, when given, whether the deployment is public
    (launch.serve calls it once, with the flag's outcome)."""
    global _current, _public
    _current = limits
    if public is not None:
        _public = bool(public)
    return limits


def current() -> Limits:
    return _current


def check_max_new_tokens(value, limits: Limits) -> int:
    return check_integer("Max new tokens", value, 1, limits.max_new_tokens)


def check_sweep_size(drafts: int, ks: int, temperatures: int, limits: Limits, schedules: int = 1) -> int:
    points = drafts * ks * temperatures * schedules
    if points > limits.max_sweep_points:
        raise InvalidSettingsError(
            f"This sweep has {points} points ({drafts} draft(s) x {ks} K value(s) x {temperatures} "
            f"temperature(s) x {schedules} K schedule(s)); this deployment runs at most "
            f"{limits.max_sweep_points}: choose fewer values")
    return points
