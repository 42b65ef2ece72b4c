"""Server options from flags and environment, model preloading, and launching the app."""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping

from specdec import fetch, loading, presets
from specdec.auto_choice import AUTO
from specdec.errors import SpecDecError
from specdec.limits import configure, describe
from specdec.measurement import INTERACTIVE

from .callbacks import Lab, make_settings
from .deploy import add_limit_flags, apply_limits, public_deployment, resolve_limits, start_cleaner
from .models import describe_error

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
TRUE = {"1", "true", "yes", "on"}


def _flag(value: str | None, default: bool = False) -> bool:
    return default if value is None or value == "" else value.strip().lower() in TRUE


def parse_options(argv: list[str] | None = None, env: Mapping[str, str] = os.environ) -> argparse.Namespace:
    """Flags win over SPECDEC_* variables; on a Hugging Face Space (SPACE_ID set) the defaults follow
    Gradio's GRADIO_SERVER_NAME/PORT so the Space is reachable. A public deployment (a Space, or
    --public) refuses local model paths and gets the public limits (docs/deploy.md); `limits` holds them."""
    on_space = bool(env.get("SPACE_ID"))
    host = env.get("SPECDEC_HOST") or env.get("GRADIO_SERVER_NAME") or ("0.0.0.0" if on_space else "127.0.0.1")
    port = env.get("SPECDEC_PORT") or env.get("GRADIO_SERVER_PORT") or "7860"
    parser = argparse.ArgumentParser(prog="app.py", description="SpecDec Lab: the speculative decoding web app")
    parser.add_argument("--host", default=host, help=f"interface to bind (default {host}; env SPECDEC_HOST)")
    parser.add_argument("--port", type=int, default=port, help=f"port (default {port}; env SPECDEC_PORT)")
    parser.add_argument("--share", action=argparse.BooleanOptionalAction, default=_flag(env.get("SPECDEC_SHARE")),
                        help="create a public gradio.live link (env SPECDEC_SHARE=1)")
    parser.add_argument("--device", default=env.get("SPECDEC_DEVICE", "auto"), help="auto, cpu, cuda, mps…")
    parser.add_argument("--allow-local-paths", action=argparse.BooleanOptionalAction, default=None,
                        help="let users load models from folders on this machine (off on a public deployment; "
                             "env SPECDEC_ALLOW_LOCAL_PATHS)")
    parser.add_argument("--preload", action=argparse.BooleanOptionalAction,
                        default=_flag(env.get("SPECDEC_PRELOAD"), default=True),
                        help="load and warm up the default pair at start-up (fast first run)")
    add_limit_flags(parser)
    options = parser.parse_args(argv)
    public = public_deployment(options, env)
    if options.allow_local_paths is None:
        options.allow_local_paths = _flag(env.get("SPECDEC_ALLOW_LOCAL_PATHS"), default=not public)
    try:
        options.limits = resolve_limits(options, env)
    except SpecDecError as exc:
        parser.error(str(exc))
    return options


# --- preloading: fetch, load and warm up the default pair in the background -------------------------

PRELOAD_FETCH = ("smollm2-135m-instruct",)  # fetched (downloaded and converted once) before anything loads
FALLBACK_PAIR = ("lab-target", "lab-draft-distilled")  # bundled: always there, no network


@dataclass
class PreloadState:
    """What the background preload is doing, process-wide, for the status line (preload_update)."""

    message: str = ""
    done: bool = False
    pair: tuple[str, str] | None = None  # the pair actually preloaded
    fallback_reason: str | None = None  # why the default pair was replaced by the bundled family

    def say(self, message: str) -> None:
        self.message = str(message)
        log.info("preload: %s", message)


PRELOAD = PreloadState()


def warm_up(lab: Lab, target: str = presets.DEFAULT_TARGET, draft: str = AUTO,
            state: PreloadState = PRELOAD, ensure: Callable = fetch.ensure_model) -> None:
    """Fetches PRELOAD_FETCH, then loads the pair into the shared (read-only) model cache and runs a few
    tokens (the app's default draft, `auto`: its first run on a machine measures every candidate's costs,
    auto_costs.py). If a model of the pair cannot be had, warms up the bundled family instead and records why.
    Never raises: the app keeps serving, and a later run shows its own error."""
    try:
        reason = fetch_first(state, (target, draft), ensure)
        if reason is None:
            try:
                return finish(state, load_and_run(lab, target, draft, state))
            except Exception as exc:  # noqa: BLE001
                reason = describe_error(exc)
        if (target, draft) == FALLBACK_PAIR:
            log.error("preloading the default pair failed: %s", reason)
            state.say(f"Preloading failed: {reason}")
            return finish(state, None)
        state.fallback_reason = f"{target} is not available ({reason}); using the bundled lab family instead"
        log.warning("preload: %s", state.fallback_reason)
        finish(state, load_and_run(lab, *FALLBACK_PAIR, state))
    except Exception:  # noqa: BLE001 (the app still serves; the first run will show the error)
        log.exception("preloading the default pair failed")
        finish(state, None)


def fetch_first(state: PreloadState, pair: tuple[str, str], ensure: Callable) -> str | None:
    """Fetches PRELOAD_FETCH and the pair's fetchable names; the reason if one the pair needs failed."""
    for name in dict.fromkeys([*PRELOAD_FETCH, *(n for n in pair if n and fetch.is_fetchable(n))]):
        try:
            ensure(name, progress=state.say)
        except Exception as exc:  # noqa: BLE001 (FetchError above all; anything else is reported the same)
            message = describe_error(exc)
            if name in pair:
                return message
            log.warning("preload: fetching %s failed: %s", name, message)
    return None


def load_and_run(lab: Lab, target: str, draft: str, state: PreloadState) -> tuple[str, str]:
    """Loads the target and its drafter (a draft model, prompt lookup, …) as a Run would, then runs 8 tokens."""
    t = lab.load(target, progress=state.say)
    d = lab.engine.load_drafter(draft, t, load_model=lab.load, progress=state.say)
    state.say(f"Warming up {target} + {draft}…")
    ids = lab.engine.encode_prompt(t, "Write a Python function that adds two numbers.", True)
    lab.engine.generate(t, d, ids, make_settings(4, 0.0, 1.0, 0, 8, 0))
    return target, draft


def finish(state: PreloadState, pair: tuple[str, str] | None) -> None:
    if pair is not None:
        log.info("preloaded %s + %s", *pair)  # scripts/measure_ui_latency.py waits for this line
    state.pair, state.done = pair, True


def preload_update(state: PreloadState = PRELOAD) -> dict:
    """For a gr.Timer tick in layout.py: {"status": preload message} while the preload runs; once it is
    done, "timer" (stop ticking) and an empty status or, after a fallback, the reason, with the bundled
    pair for "target" and "draft". Keys follow layout.bind's convention: absent = leave as it is."""
    import gradio as gr

    from .render import render_status

    if not state.done:
        return {"status": render_status(f"{state.message or 'Preparing the default models…'} "
                                        f"({fetch.describe_cache()})")}
    update: dict = {"timer": gr.Timer(active=False), "status": ""}
    if state.fallback_reason:
        update.update(status=render_status(state.fallback_reason), target=FALLBACK_PAIR[0], draft=FALLBACK_PAIR[1])
    return update


def preload_in_background(lab: Lab) -> threading.Thread:
    thread = threading.Thread(target=warm_up, args=(lab,), name="specdec-preload", daemon=True)
    thread.start()
    return thread


def serve(options: argparse.Namespace, lab: Lab | None = None, block: bool = True):
    """Builds the app and launches it; returns (demo, local URL) when block is False."""
    from .layout import LAUNCH_KWARGS, build_app

    limits = configure(options.limits)  # the callbacks' guard reads them (guard.py)
    loading.set_cache_budget(limits.model_cache_gb)
    log.info("limits: %s", describe(limits))
    log.info("%s", fetch.describe_cache())
    lab = lab or Lab(device=options.device, allow_local_paths=options.allow_local_paths,
                     policy=replace(INTERACTIVE, max_repeats=limits.max_repeats))
    demo = build_app(lab)
    extra = apply_limits(demo, limits)
    start_cleaner()
    if options.preload:
        preload_in_background(lab)
    else:
        PRELOAD.done = True  # nothing to report in the status line
    _, url, _ = demo.launch(server_name=options.host, server_port=options.port, share=options.share,
                            prevent_thread_lock=not block, quiet=not block, **LAUNCH_KWARGS, **extra)
    return demo, url


# --- running the app in a child process (tests and measurement scripts) -------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_served(url: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    """Gradio prints its URL before it answers: poll until it does."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout_s} s")


@contextlib.contextmanager
def app_process(log_path: str | Path, *flags: str):
    """Runs `python app.py --port <free> *flags` and yields its URL once it answers; stops it on exit."""
    port = free_port()
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port), *flags], cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_served(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
