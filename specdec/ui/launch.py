"""Server options from flags and environment, and launching the app (preload.py warms the default pair up)."""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from specdec import config
from specdec.errors import SpecDecError
from specdec.measure.speedup import INTERACTIVE
from specdec.models import fetch, loading
from specdec.paths import REPO_ROOT
from specdec.serving.limits import configure, describe
from specdec.ui.deploy import add_limit_flags, apply_limits, public_deployment, resolve_limits, start_cleaner
from specdec.ui.preload import PRELOAD, preload_in_background
from specdec.ui.tabs.generate.callbacks import Lab

log = logging.getLogger(__name__)
ROOT = REPO_ROOT


def parse_options(argv: list[str] | None = None, env: Mapping[str, str] = os.environ) -> argparse.Namespace:
    """Flags win over SPECDEC_* variables (docs/configuration.md); on a Hugging Face Space (SPACE_ID set) the
    defaults follow Gradio's GRADIO_SERVER_NAME/PORT so the Space is reachable. A public deployment (a Space, or
    --public) refuses local model paths and gets the public limits (docs/deploy.md); `limits` holds them. A bad
    flag or variable exits with a usage line that names it."""
    parser = argparse.ArgumentParser(prog="app.py", description="SpecDec Lab: the speculative decoding web app")
    try:
        host, port, share, device, preload = [config.get(name, env) for name in (
            "SPECDEC_HOST", "SPECDEC_PORT", "SPECDEC_SHARE", "SPECDEC_DEVICE", "SPECDEC_PRELOAD")]
    except SpecDecError as exc:
        parser.error(str(exc))
    on_space = bool(env.get("SPACE_ID"))
    host = host or env.get("GRADIO_SERVER_NAME") or ("0.0.0.0" if on_space else "127.0.0.1")
    port = port or env.get("GRADIO_SERVER_PORT") or "7860"
    parser.add_argument("--host", default=host, help=f"interface to bind (default {host}; env SPECDEC_HOST)")
    parser.add_argument("--port", type=int, default=port, help=f"port (default {port}; env SPECDEC_PORT)")
    parser.add_argument("--share", action=argparse.BooleanOptionalAction, default=share,
                        help="create a public gradio.live link (env SPECDEC_SHARE=1)")
    parser.add_argument("--device", default=device, help="auto, cpu, cuda, mps… (env SPECDEC_DEVICE)")
    parser.add_argument("--allow-local-paths", action=argparse.BooleanOptionalAction, default=None,
                        help="let users load models from folders on this machine (off on a public deployment; "
                             "env SPECDEC_ALLOW_LOCAL_PATHS)")
    parser.add_argument("--preload", action=argparse.BooleanOptionalAction, default=preload,
                        help="load and warm up the default pair at start-up (fast first run; env SPECDEC_PRELOAD)")
    add_limit_flags(parser)
    options = parser.parse_args(argv)
    try:
        public = options.public = public_deployment(options, env)
        if options.allow_local_paths is None:
            allowed = config.get("SPECDEC_ALLOW_LOCAL_PATHS", env)
            options.allow_local_paths = not public if allowed is None else allowed
        options.limits = resolve_limits(options, env)
    except SpecDecError as exc:
        parser.error(str(exc))
    return options


def serve(options: argparse.Namespace, lab: Lab | None = None, block: bool = True):
    """Builds the app and launches it; returns (demo, local URL) when block is False."""
    from specdec.ui.layout import LAUNCH_KWARGS, build_app

    # the callbacks' guard reads the limits (guard.py); every check of a public deployment asks serving.limits.is_public
    limits = configure(options.limits, public=getattr(options, "public", None))
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
