"""The sidebar's engine choice (no server): who may point the app at which vLLM server, and the errors a
vLLM run shows without losing what is on screen; a run on a scripted vLLM API (vllm_fakes.py): its exports,
cards and report. Runs on real servers: test_vllm_server.py."""
import json

from specdec.measure.speedup import Policy
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.vllm import engine as vllm_engine

import pytest

from tests.ui_fakes import FakeEngine
from tests.vllm_fakes import FakeServers

ARGS = dict(prompt="Hi", clean_whitespace=False, target="lab-target", draft="lab-draft", target_custom="",
            draft_custom="", k=4, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=8, seed=0)


@pytest.fixture
def lab():
    return Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)


def test_choosing_the_vllm_engine_routes_generate_to_the_given_url(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    session = Session()
    note = vllm_engine.choose_engine(session, vllm_engine.VLLM, " http://127.0.0.1:1 ", "")
    assert session.vllm == vllm_engine.VllmChoice("http://127.0.0.1:1", None)
    assert "baseline" in note["engine_note"]
    vllm_engine.choose_engine(session, vllm_engine.LAB, "http://127.0.0.1:1", "")
    assert session.vllm is None


@pytest.mark.parametrize("order", [("engine", "vllm_url", "vllm_baseline_url"),
                                   ("vllm_baseline_url", "engine", "vllm_url"),
                                   ("vllm_url", "vllm_baseline_url", "engine")])
def test_the_sidebars_fields_give_one_choice_whatever_order_their_changes_arrive_in(monkeypatch, order):
    monkeypatch.delenv("SPACE_ID", raising=False)
    values = {"engine": vllm_engine.VLLM, "vllm_url": "http://127.0.0.1:1", "vllm_baseline_url": "http://127.0.0.1:2"}
    session = Session()
    for name in order:
        note = vllm_engine.record_field(name, session, values[name])
    assert session.vllm == vllm_engine.VllmChoice("http://127.0.0.1:1", "http://127.0.0.1:2")
    assert "measured against http://127.0.0.1:2" in note["engine_note"]


def test_on_a_public_deployment_only_the_operators_url_is_used(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "owner/space")
    monkeypatch.delenv("SPECDEC_VLLM_URL", raising=False)
    session = Session()
    update = vllm_engine.choose_engine(session, vllm_engine.VLLM, "http://10.0.0.1:80", "")
    assert session.vllm is None and update["engine"] == vllm_engine.LAB and "off" in update["engine_note"]
    monkeypatch.setenv("SPECDEC_VLLM_URL", "http://operator:8000")
    vllm_engine.choose_engine(session, vllm_engine.VLLM, "http://10.0.0.1:80", "http://10.0.0.2:80")
    assert session.vllm == vllm_engine.VllmChoice("http://operator:8000", None)  # user URLs ignored


def test_an_unreachable_server_shows_one_message_and_keeps_the_screen(lab, monkeypatch):
    import socket

    monkeypatch.delenv("SPACE_ID", raising=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    session = Session()
    vllm_engine.choose_engine(session, vllm_engine.VLLM, f"http://127.0.0.1:{port}", "")
    updates = list(lab.generate(session, **ARGS))
    last = updates[-1]
    assert "cannot reach" in last["error"] and "tokens" not in last and "cards" not in last
    assert not session.running  # the app keeps serving: the next run can start


# --- a run on a scripted vLLM API (vllm_fakes.py): the engine side runs for real -------------------------------

QUICK = Policy(min_repeats=6, floor_repeats=6, max_repeats=6, tolerance=0.0, budget_s=0.0, hard_budget_s=0.0)
LEAD, BASE = "http://127.0.0.1:8000", "http://127.0.0.1:8001"


@pytest.fixture
def on_vllm(monkeypatch):
    """(lab, session) with the sidebar's engine on a scripted speculative server (K=3) and its baseline."""
    monkeypatch.delenv("SPACE_ID", raising=False)
    FakeServers(p8000=3, p8001=0).patch(monkeypatch)
    session = Session()
    vllm_engine.choose_engine(session, vllm_engine.VLLM, LEAD, BASE)
    return Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0, policy=QUICK), session


def test_a_vllm_run_exports_its_trace_with_vllms_record_and_the_measured_speedup(on_vllm):
    lab, session = on_vllm
    final = list(lab.generate(session, **{**ARGS, "max_new_tokens": 12}))[-1]
    assert not final["error"]
    csv_path, json_path = final["exports"]
    report = json.loads(open(json_path).read())
    assert report["engine"] == "vllm" and report["vllm_speculative_decoding"]["per_step_accepted"]
    assert report["server"]["url"] == LEAD and report["baseline_server"]["url"] == BASE
    assert report["speedup"]["repeats"] == 6 and report["baseline"]["new_tokens"] == 12
    assert report["server_counters_after_run"]["drafts"] == 10
    assert "accepted" in open(csv_path).read()


def test_a_vllm_servers_memory_is_not_exposed_unless_the_lab_started_it(on_vllm):
    lab, session = on_vllm
    final = list(lab.generate(session, **ARGS))[-1]
    assert "Memory (vLLM server)" in final["cards"] and "not exposed by the server" in final["cards"]
    assert final["cards"].count('data-metric="memory"') == 1


def test_the_servers_metrics_counters_are_shown_in_their_own_card(on_vllm):
    lab, session = on_vllm
    final = list(lab.generate(session, **ARGS))[-1]
    assert 'data-metric="vllm_counters"' in final["cards"]
    assert "10 drafts, 30 draft tokens, 15 accepted" in final["cards"] and "2.50" in final["cards"]


def test_the_html_report_of_a_vllm_run_has_vllms_cards_and_its_measurement(on_vllm):
    from specdec.ui.tabs.generate.callbacks import build_report

    lab, session = on_vllm
    list(lab.generate(session, **ARGS))
    html = build_report(lab, session)
    assert "vLLM server counters" in html and "Not available from vLLM" in html
    assert f"vLLM server {LEAD}" in html and f"vs baseline server {BASE}" in html


def test_a_launched_servers_memory_is_its_process_groups_resident_memory():
    import subprocess
    import sys

    from specdec.vllm.launcher import group_rss_bytes

    child = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
                             start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "up\n"  # the interpreter is in memory, not still starting
        rss = group_rss_bytes(child.pid)
        assert rss is not None and 1 << 20 < rss < 1 << 30
    finally:
        child.kill()
        child.wait()
    assert group_rss_bytes(child.pid) is None
