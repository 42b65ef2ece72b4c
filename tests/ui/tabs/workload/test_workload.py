"""The "Across requests" tab's run (specdec/ui/tabs/workload/callbacks.py): a workload's requests in order, suffix
decoding and prompt lookup on each, one update per request, a store of its own; bad input is a message."""
from __future__ import annotations

import json

from specdec.drafters import suffix
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.workload import callbacks as workload_run
from specdec.ui.views import workload as view

import pytest

# code the lab target writes, repeated with small changes: later requests can draft from earlier outputs
PROMPTS = [f"def area_{n}(w, h):\n    return w * h\n\ndef volume_{n}(w, h, d):\n" for n in range(3)]


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    (tmp_path / "tiny.json").write_text(json.dumps(PROMPTS))
    monkeypatch.setattr(workload_run, "WORKLOADS_DIR", tmp_path)
    monkeypatch.setattr(suffix, "STORES", {})


def run(*args) -> list[dict]:
    return list(workload_run.run_workload(Lab(), Session(), *args))


def test_each_request_adds_one_point_per_drafter_and_one_table_row(shipped):
    updates = [u for u in run("tiny", "lab-target", "", 4, 24) if "workload_table" in u]
    assert [len(u["workload_table"]) for u in updates] == [1, 2, 3]
    last = updates[-1]
    assert [len(trace.x) for trace in last["workload_per_forward"].data] == [3, 3]
    assert list(last["workload_table"]["Same text"]) == ["yes"] * 3
    assert "on the 2 after it" in last["workload_summary"]


def test_a_workload_run_keeps_no_store_behind(shipped):
    run("tiny", "lab-target", "", 4, 24)
    assert suffix.STORES == {}


def test_an_unknown_workload_is_a_visible_message_not_a_traceback(shipped):
    updates = run("../../etc/passwd", "lab-target", "", 4, 24)
    assert "Unknown workload" in updates[-1]["error"]


def test_the_summary_compares_the_later_requests_pooled():
    rows = [view.RequestRow(1, 10, {"suffix": 1.0, "prompt-lookup": 1.0}, {"suffix": None, "prompt-lookup": 0.5},
                            {"suffix": 10, "prompt-lookup": 10}, True),
            view.RequestRow(2, 30, {"suffix": 3.0, "prompt-lookup": 1.5}, {"suffix": 0.9, "prompt-lookup": 0.4},
                            {"suffix": 10, "prompt-lookup": 20}, True)]
    text = view.summary(rows, 2)
    assert "1.00 tokens per target forward on the first request, 3.00 on the 1 after it" in text
    assert "2.00× prompt lookup" in text and "same text on every request" in text
    assert list(view.table(rows)["Suffix: accepted / drafted"]) == ["drafted nothing", "90%"]
