"""The sidebar's engine choice (no server): who may point the app at which vLLM server, and the errors a
vLLM run shows without losing what is on screen. Runs on real servers: test_vllm_server.py."""
import pytest

from specdec.ui import vllm_engine
from specdec.ui.callbacks import Lab
from specdec.ui.session import Session
from ui_fakes import FakeEngine

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
