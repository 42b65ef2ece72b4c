"""The Race and the Sweep with Engine: vLLM server, on a scripted vLLM API and launcher (vllm_fakes.py): the engine
side (specdec/vllm/engine.py, sweep.py) runs for real; no server starts. Real servers: test_vllm_server.py."""
from specdec.measure.speedup import Policy
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.race.layout import run_race
from specdec.ui.tabs.sweep.layout import run_sweep
from specdec.ui.vllm import engine as vllm_engine

import pytest

from tests.ui.test_ui_public import PUBLIC_WAYS, start_app
from tests.ui_fakes import FakeEngine, form_request, split_request
from tests.vllm_fakes import FakeLauncher, FakeServers

QUICK = Policy(min_repeats=6, floor_repeats=6, max_repeats=6, tolerance=0.0, budget_s=0.0, hard_budget_s=0.0)
LEAD, BASE = "http://127.0.0.1:8000", "http://127.0.0.1:8001"
RACE = dict(prompt="Hi", clean_whitespace=False, target="", draft="", target_custom="", draft_custom="", k=4,
            temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=12, seed=0)
SWEEP = dict(prompt="Hi", clean_whitespace=False, target="", target_custom="", drafts=["prompt-lookup"],
             ks="2, 4", temperatures="0", tokens=12, seed=0, top_p=1.0, top_k=0)


def no_progress(*args, **kwargs):
    pass


@pytest.fixture
def servers(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    return FakeServers(p8000=3, p8001=0).patch(monkeypatch)


def session_on(lead=LEAD, baseline=BASE) -> Session:
    session = Session()
    vllm_engine.choose_engine(session, vllm_engine.VLLM, lead, baseline)
    return session


@pytest.fixture
def lab():
    return Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0, policy=QUICK,
               sweep_policy=QUICK)


# --- Race ---------------------------------------------------------------------------------------------------

def test_the_vllm_race_runs_the_speculative_server_then_the_baseline_then_measures(servers, lab):
    updates = list(run_race(lab, session_on(), form_request(**RACE)))
    assert not any(u.get("error") for u in updates)
    first_base = next(i for i, u in enumerate(updates) if "t1000" in u.get("race_base", ""))
    assert all("t1000" not in u.get("race_base", "") for u in updates[:first_base])
    assert any("tok-accepted" in u.get("race_spec", "") for u in updates[:first_base])  # spec lane done first
    final = updates[-1]
    assert "Measured speedup" in final["race_summary"] and "95% interval" in final["race_summary"]
    assert [url for url, _, _ in servers.requests[:2]] == [LEAD, BASE]
    assert "as the client sees it" in updates[first_base]["race_base"]
    assert lab.engine.loaded == []  # the lab's models are not loaded for a race on vLLM


def test_the_vllm_race_and_generate_share_one_measurement(servers, lab):
    session = session_on()
    list(run_race(lab, session, form_request(**RACE)))
    timed = len(servers.requests)
    list(lab.generate(session, form_request(**RACE)))
    assert len(servers.requests) == timed + 1  # Generate streams once and reuses the race's measured pairs


def test_the_vllm_race_without_a_baseline_server_says_which_url_to_give(servers, lab):
    last = list(run_race(lab, session_on(baseline=""), form_request(**RACE)))[-1]
    assert "baseline server URL" in last["error"] and "race_base" not in last


def test_a_stop_during_the_vllm_race_ends_it_without_a_verdict(servers, lab):
    session = session_on()
    updates = []
    for update in run_race(lab, session, form_request(**RACE)):
        updates.append(update)
        if "race_spec" in update:
            session.stop_requested = True
    assert "no verdict" in updates[-1]["race_summary"] and updates[-1]["status"]
    assert all(not exact for _, _, exact in servers.requests)  # no timed pair started


# --- Sweep --------------------------------------------------------------------------------------------------

def sweep(lab, session, launcher, **overrides):
    request, rest = split_request({**SWEEP, **overrides})
    return list(run_sweep(lab, session, request, **rest, progress=no_progress, python="python",
                          resolve=lambda name: f"/exports/{name}", launcher=launcher))


def test_the_vllm_sweep_starts_measures_and_stops_one_server_per_k(servers, lab):
    launcher = FakeLauncher(servers)
    session = session_on()
    updates = sweep(lab, session, launcher)
    final = updates[-1]
    assert not final["error"], final["error"]
    assert [(r["method"], r["k"]) for r in launcher.started] == [("ngram", 2), ("ngram", 4)]
    assert launcher.running == [] and launcher.stopped == launcher.started
    assert [r.k for r in session.sweep_rows] == [2, 4] and all(r.repeats == 6 for r in session.sweep_rows)
    assert all(r.c is None and r.theory_textbook is None for r in session.sweep_rows)  # not exposed by vLLM
    assert final["sweep_table"].shape[0] == 2 and final["sweep_speedup"] is not None
    assert "not available from vLLM" in final["status"]


def test_the_vllm_sweep_says_how_long_its_server_starts_take_before_starting(servers, lab):
    launcher = FakeLauncher(servers)
    updates = sweep(lab, session_on(), launcher)
    before = next(u["status"] for u in updates if "Starting" in u.get("status", ""))
    assert "Starting 2 vLLM servers one after the other" in before and "min each" in before
    assert updates.index(next(u for u in updates if "setting 1 of 2" in u.get("status", ""))) > \
        updates.index(next(u for u in updates if "Starting" in u.get("status", "")))
    assert any("setting 1 of 2" in u.get("status", "") and "Waiting for /health" in u["status"] for u in updates)


def test_a_stop_while_a_server_starts_stops_it_and_starts_no_other(servers, lab):
    launcher, session = FakeLauncher(servers, health_rounds=5), session_on()
    updates = []
    request, own = split_request(SWEEP)
    for update in run_sweep(lab, session, request, **own, progress=no_progress, python="python",
                            resolve=lambda name: name, launcher=launcher):
        updates.append(update)
        if "Waiting for /health" in update.get("status", ""):
            session.stop_requested = True
    assert len(launcher.started) == 1 and launcher.running == []
    assert "stopped: 0 of 2" in updates[-1]["status"]


def test_a_closed_sweep_page_leaves_no_server_running(servers, lab):
    launcher = FakeLauncher(servers, health_rounds=5)
    request, own = split_request(SWEEP)
    gen = run_sweep(lab, session_on(), request, **own, progress=no_progress, python="python", resolve=lambda n: n,
                    launcher=launcher)
    for update in gen:
        if "Waiting for /health" in update.get("status", ""):
            break
    gen.close()  # what Gradio does when the page goes away
    assert len(launcher.started) == 1 and launcher.running == []


def test_the_zoo_draft_becomes_vllms_draft_model_with_its_exported_folder(servers, lab):
    launcher = FakeLauncher(servers)
    sweep(lab, session_on(), launcher, drafts=["smollm2-135m-draft"], ks="3")
    spec = launcher.started[0]["spec"]
    assert (spec.method, spec.k, spec.draft) == ("draft_model", 3, "/exports/smollm2-135m-draft")
    assert (spec.target, spec.name) == ("/models/smollm2-135m-instruct", "smollm2-135m-instruct")  # the baseline's


@pytest.mark.parametrize("case, expected", [
    ({"drafts": ["smollm2-135m-medusa"]}, "no vLLM counterpart"),
    ({"drafts": ["lab-draft-small"]}, "no vLLM counterpart"),
    ({"k_schedule": "heuristic"}, "constant K schedule only"),
    ({"ks": "0"}, "K"),
])
def test_a_vllm_sweep_it_cannot_run_gives_one_message_and_starts_nothing(servers, lab, case, expected):
    launcher = FakeLauncher(servers)
    last = sweep(lab, session_on(), launcher, **case)[-1]
    assert expected in last["error"] and launcher.started == []


def test_the_vllm_sweep_needs_a_baseline_server(servers, lab):
    launcher = FakeLauncher(servers)
    last = sweep(lab, session_on(baseline=""), launcher)[-1]
    assert "baseline server URL" in last["error"] and launcher.started == []


@pytest.mark.parametrize("way", PUBLIC_WAYS)
def test_the_vllm_sweep_is_not_offered_on_a_public_deployment(servers, lab, monkeypatch, way):
    launcher, session = FakeLauncher(servers), session_on()
    start_app(monkeypatch, way)
    last = sweep(lab, session, launcher)[-1]
    assert "not offered on a public deployment" in last["error"] and launcher.started == []
