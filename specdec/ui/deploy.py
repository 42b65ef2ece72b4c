"""Deployment settings of the web app: limits from flags and environment (specdec.serving.limits), applied
to the Blocks before launch, and old export files removed while it serves (docs/deploy.md)."""
from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from specdec.serving.limits import ENVIRONMENT, Limits, limits_from_env, parse_limit, public_by_rule
from specdec.ui.guard import harden_inputs

log = logging.getLogger(__name__)
EXPORT_MAX_AGE_S = 3600  # export files (trace CSV/JSON, sweep CSV) are kept this long
CLEAN_EVERY_S = 900
# what the app writes: tables.py's exports, the tour's handout with a learner's work
EXPORT_NAMES = {"specdec-trace.csv", "specdec-trace.json", "specdec-sweep.csv", "specdec-workshop-handout.html"}


def flag_for(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--public", action=argparse.BooleanOptionalAction, default=None,
                        help="public-deployment defaults: tighter limits, no local paths (default on a Space; "
                             "env SPECDEC_PUBLIC)")
    for name, variable in ENVIRONMENT.items():
        parser.add_argument(flag_for(name), default=None, metavar="N",
                            help=f"limit: {name.replace('_', ' ')} (env {variable}; docs/deploy.md)")


def resolve_limits(options: argparse.Namespace, env: Mapping[str, str]) -> Limits:
    """The profile's defaults (public or local), then SPECDEC_* variables, then flags."""
    limits = limits_from_env(env, public=public_deployment(options, env))
    changes = {}
    for name in ENVIRONMENT:
        raw = getattr(options, name, None)
        if raw is not None:
            changes[name] = parse_limit(name, str(raw).strip(), flag_for(name))
    return replace(limits, **changes)


def public_deployment(options: argparse.Namespace, env: Mapping[str, str]) -> bool:
    """The one rule (serving.limits.public_by_rule) with the --public / --no-public flag."""
    return public_by_rule(env, getattr(options, "public", None))


def apply_limits(demo, limits: Limits) -> dict:
    """Hardens the inputs, bounds the queue and the cached output files; returns extra launch kwargs."""
    harden_inputs(demo)
    demo.queue(default_concurrency_limit=1, max_size=limits.queue_size)  # layout.py's default, plus the bound
    demo.delete_cache = (CLEAN_EVERY_S, EXPORT_MAX_AGE_S)  # Gradio's copies of the files it served
    return {"state_session_capacity": limits.sessions}


def remove_old_exports(folder: str | Path | None = None, max_age_s: float = EXPORT_MAX_AGE_S,
                       now: float | None = None) -> int:
    """Removes the app's own export folders (tempdir/specdec-*, holding only export files) older than
    max_age_s; returns how many. Anything else under that prefix is left alone."""
    folder, now, removed = Path(folder or tempfile.gettempdir()), now or time.time(), 0
    for entry in folder.glob("specdec-*"):
        try:
            if not entry.is_dir() or now - entry.stat().st_mtime < max_age_s:
                continue
            if {f.name for f in entry.iterdir()} <= EXPORT_NAMES:
                shutil.rmtree(entry)
                removed += 1
        except OSError:  # removed meanwhile, or not ours to touch
            continue
    return removed


def start_cleaner(every_s: float = CLEAN_EVERY_S, max_age_s: float = EXPORT_MAX_AGE_S) -> threading.Thread:
    def loop():
        while True:
            removed = remove_old_exports(max_age_s=max_age_s)
            if removed:
                log.info("removed %d old export folder(s)", removed)
            time.sleep(every_s)

    thread = threading.Thread(target=loop, name="specdec-export-cleaner", daemon=True)
    thread.start()
    return thread
