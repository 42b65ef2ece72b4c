"""The app gives each browser session a suffix store of its own (specdec/ui/suffix_sessions.py): requests run
the way Gradio runs a streaming callback (gradio.utils.get_function_with_locals, which sets the event's request
around every step) for two sessions of a public deployment."""
from __future__ import annotations

from types import SimpleNamespace

from specdec.drafters import suffix
from specdec.drafters.suffix import SuffixDrafter
from specdec.ui import suffix_sessions

import pytest
import torch
from gradio.utils import get_function_with_locals

SECRET = [7, 3, 9, 8, 6, 5, 2]


@pytest.fixture(autouse=True)
def public_app(monkeypatch):
    """A public deployment with no earlier requests, the app's owner source installed."""
    monkeypatch.setattr(suffix, "STORES", {})
    monkeypatch.setattr(suffix, "owner_source", None)
    monkeypatch.delenv(suffix.SHARED_STORE, raising=False)
    monkeypatch.setenv("SPACE_ID", "lab/space")
    suffix_sessions.install()


def in_session(session_hash: str, steps):
    """Runs the generator function `steps` as Gradio runs a callback of the browser session `session_hash`;
    returns what it yielded last."""
    request = SimpleNamespace(session_hash=session_hash)
    call = get_function_with_locals(steps, blocks=None, event_id=None, in_event_listener=True, request=request,
                                    state=None)
    return list(call())[-1]


def learns(prompt: list[int], output: list[int]):
    """A request whose output the drafter (no owner of its own, as the app builds it) saw step by step."""
    def steps():
        drafter = SuffixDrafter(16, torch.device("cpu"), "app-target")
        drafter.start(prompt, 64)
        for n in range(1, len(output) + 1):
            drafter.propose_tree(prompt + output[:n], 6)
            yield n
        drafter.finish(prompt + output)
        yield drafter.request_owner
    return steps


def drafts(prompt: list[int]):
    def steps():
        drafter = SuffixDrafter(16, torch.device("cpu"), "app-target")
        drafter.start(prompt, 64)
        yield drafter.propose_tree(prompt, 6).ids
    return steps


def test_a_request_belongs_to_the_browser_session_that_runs_it():
    assert in_session("alice", learns([1, 2], SECRET)) == "alice"
    assert suffix_sessions.session_owner() is None  # outside a Gradio call: no owner


def test_two_sessions_never_draft_each_others_text_on_a_public_deployment():
    in_session("alice", learns([1, 2], SECRET))
    assert set(in_session("bob", drafts([0] + SECRET[:3]))) & set(SECRET[3:]) == set()
    assert in_session("alice", drafts([0] + SECRET[:3])) == SECRET[3:6]  # guard: her own session drafts it


def test_the_operators_shared_store_switch_shares_text_across_sessions(monkeypatch):
    monkeypatch.setenv(suffix.SHARED_STORE, "1")
    in_session("alice", learns([1, 2], SECRET))
    assert in_session("bob", drafts([0] + SECRET[:3])) == SECRET[3:6]
