"""The suffix drafter's owner in the app: the browser session that runs the request.

The suffix drafter (specdec/drafters/suffix.py) keeps earlier requests' outputs to draft from. On a public
deployment (`suffix.public_source`: the one serving.limits.is_public) a request may draft only from its own
session's outputs unless the operator sets SPECDEC_SUFFIX_SHARED_STORE; the drafter asks `suffix.owner_source` who
owns a request when it starts. Gradio sets
the request of the event it is running (gradio.context.LocalContext.request) around every call of a callback and
every step of a streaming one, in the thread that runs it; its `session_hash` is one browser session (one page
load), so each session gets a store of its own. Where no Gradio request is running (the CLI, an experiment, a
thread Gradio did not start) there is no owner: the store is then not used on a public deployment, and locally
every request shares it, as before.
"""
from __future__ import annotations

from typing import Optional

from specdec.drafters import suffix
from specdec.serving.limits import is_public

from gradio.context import LocalContext


def session_owner() -> Optional[str]:
    """The session hash of the Gradio request running in this thread, or None."""
    return getattr(LocalContext.request.get(None), "session_hash", None) or None


def install() -> None:
    """Every suffix request started from now on, without an owner of its own, belongs to its browser session, and
    keeps to its session's entries when this deployment is public (serving.limits.is_public)."""
    suffix.owner_source = session_owner
    suffix.public_source = is_public
