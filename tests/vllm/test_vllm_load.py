"""`python -m specdec load` (specdec/vllm/load.py, load_report.py, cli/load.py) against scripted vLLM servers
(tests/vllm_fakes.py: the engine side, the loops and the statistics run for real); real servers:
test_vllm_server.py."""
from __future__ import annotations

import json
import threading

from specdec.cli.main import main
from specdec.vllm import load as load_mod
from specdec.vllm.load import Level, LoadSettings, Loop, RequestRecord, closed_loop, parse_concurrencies
from specdec.vllm.load_report import ROW_FIELDS, crossover, csv_text, engine_row, quantile, sample_events
from specdec.vllm.client import VllmError

import pytest
from tests.vllm_fakes import FakeClient, FakeServers

LEAD, BASE = "http://127.0.0.1:8000", "http://127.0.0.1:8001"


@pytest.fixture
def servers(monkeypatch):
    return FakeServers(p8000=4, p8001=0).patch(monkeypatch)


@pytest.fixture
def prompts(tmp_path):
    path = tmp_path / "prompts.json"
    path.write_text(json.dumps(["Explain tides.", "Rewrite: the cat sat.", "Write a haiku."]))
    return str(path)


def load_json(capsys, prompts, *extra, concurrency="1,2,4"):
    code = main(["load", "--vllm-url", LEAD, "--vllm-baseline-url", BASE, "--concurrency", concurrency,
                 "--prompts-file", prompts, "--max-new-tokens", "9", "--settle-s", "0", "--json", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), captured.err


def one_line_error(capsys, *args) -> str:
    assert main(["load", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and captured.out == ""
    return lines[0]


# --- the JSON object -------------------------------------------------------------------------------------------

def test_load_json_has_one_row_per_concurrency_and_engine_with_every_documented_field(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts)
    assert [(r["concurrency"], r["engine"]) for r in report["rows"]] == [
        (c, e) for c in (1, 2, 4) for e in ("speculative", "baseline")]
    for row in report["rows"]:
        assert set(ROW_FIELDS) <= set(row)
        assert row["output_tokens_per_s"] > 0 and row["tpot_ms_p50"] >= 0 and row["ttft_ms_p50"] >= 0
        assert row["tpot_ms_p95"] >= row["tpot_ms_p50"]


def test_load_json_counts_the_requests_every_loop_sends(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts, "--pairs", "6", "--rounds", "2")
    requests = {(r["concurrency"], r["engine"]): r["requests"] for r in report["rows"]}
    # max(3 prompts, 2 rounds x c) requests a loop, 6 timed loops a server
    assert requests[(1, "speculative")] == 6 * 3 and requests[(4, "baseline")] == 6 * 8


def test_load_json_takes_acceptance_from_vllms_per_request_records(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts)
    spec = next(r for r in report["rows"] if r["engine"] == "speculative")
    base = next(r for r in report["rows"] if r["engine"] == "baseline")
    # the fake accepts 3, 1, 0, 2, … of K = 4 drafts; 9 tokens: the prefill's + steps of 4, 2, 1 and 1 (the last
    # step cut to the one token left: 0 accepted)
    assert spec["acceptance_rate"] == pytest.approx((3 + 1 + 0 + 0) / 16)
    assert spec["mean_acceptance_length"] == pytest.approx(1 + 4 / 4)
    assert base["acceptance_rate"] is None and base["mean_acceptance_length"] is None
    # 8 tokens after the prefill's in 4 steps, 16 drafts; target-only one token a step
    assert (spec["tokens_per_step"], spec["drafted_per_step"]) == (2.0, 4.0)
    assert (base["tokens_per_step"], base["drafted_per_step"]) == (1.0, 0.0)


def test_steps_without_drafts_count_as_plain_steps():
    from specdec.vllm.load_report import decode_steps_of

    # 10 tokens: the prefill's, two verification steps of 3 and 1 token(s), five plain steps between them
    assert decode_steps_of(_request(0, list(range(10)), steps=([2, 0], [3, 3]))) == 2 + 5
    # vLLM counted a draft accepted past the last token asked for: no plain step, never fewer than 0
    assert decode_steps_of(_request(0, list(range(4)), steps=([3], [3]))) == 1


def test_load_json_gives_each_concurrency_a_speedup_with_its_interval_and_the_crossover(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts, "--pairs", "6")
    assert [s["concurrency"] for s in report["speedups"]] == [1, 2, 4]
    for s in report["speedups"]:
        assert s["repeats"] == 6 and s["low"] <= s["speedup"] <= s["high"]
    assert report["crossover"] == crossover(report["speedups"])


def test_load_json_asks_both_servers_for_exactly_the_same_tokens(servers, prompts, capsys):
    load_json(capsys, prompts, concurrency="2")
    asked = {(url, n, exact) for url, n, exact in servers.requests}
    assert asked == {(LEAD, 9, True), (BASE, 9, True)}


def test_load_json_marks_identical_greedy_text_against_the_baseline_alone(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts)
    assert all(r["same_text"] and r["same_text_requests"] == r["requests"] for r in report["rows"])


def test_load_json_is_labelled_with_its_machine_command_and_date(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts)
    assert "cores" in report["machine"] and report["date"].endswith("Z")
    assert report["command"].startswith("python -m specdec load --vllm-url " + LEAD)
    assert report["speculative"]["k"] == 4 and report["baseline"]["speculative"] is False
    assert set(report["method"]) >= {"clock", "tokens", "warm_up", "same_text"}


def test_load_json_keeps_a_few_requests_of_each_batch_that_colour_by_fate(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts)
    sample = next(s for s in report["samples"] if s["concurrency"] == 4)
    events = sample_events(sample)
    assert [t for e in events for t in e.emitted_ids] == sample["token_ids"]
    assert [e.num_accepted for e in events[1:]][:3] == [3, 1, 0]
    assert {e.final.kind for e in events[1:] if e.final} >= {"resampled"}


def test_load_without_json_prints_the_table_and_reports_each_level_on_stderr(servers, prompts, capsys):
    assert main(["load", "--vllm-url", LEAD, "--vllm-baseline-url", BASE, "--concurrency", "1,2",
                 "--prompts-file", prompts, "--max-new-tokens", "5", "--settle-s", "0", "--pairs", "2"]) == 0
    captured = capsys.readouterr()
    assert "crossover:" in captured.out and captured.out.count("speculative") >= 2
    assert "concurrency 1:" in captured.err and "concurrency 2:" in captured.err


def test_load_writes_the_same_object_to_out(servers, prompts, capsys, tmp_path):
    report, _ = load_json(capsys, prompts, "--out", str(tmp_path / "run.json"), concurrency="1")
    assert json.loads((tmp_path / "run.json").read_text())["rows"] == report["rows"]


def test_load_csv_has_a_line_per_row_with_its_speedup(servers, prompts, capsys):
    report, _ = load_json(capsys, prompts, concurrency="1,2")
    lines = csv_text([report]).strip().splitlines()
    assert lines[0].startswith("method,k,concurrency,engine") and len(lines) == 1 + 4
    # the method comes from the launcher's record: a server it did not start does not expose it
    assert lines[1].split(",")[:4] == ["not exposed by the server's API", "4", "1", "speculative"]


# --- the closed loop --------------------------------------------------------------------------------------------

def test_a_closed_loop_keeps_at_most_concurrency_requests_in_flight(servers, monkeypatch):
    from specdec.vllm.engine import connect

    in_flight, most, lock = [0], [0], threading.Lock()
    real_send = load_mod.send

    def counting_send(*args, **kwargs):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            return real_send(*args, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(load_mod, "send", counting_send)
    loop = closed_loop(connect(LEAD, record_for=lambda url: None), "speculative", [[1, 2], [3]], 3, 12, 6)
    assert len(loop.requests) == 12 and most[0] <= 3
    assert [r.prompt for r in sorted(loop.requests, key=lambda r: r.sent_s)].count(0) == 6


def test_a_failing_request_stops_the_loop_with_one_error(servers, monkeypatch):
    from specdec.vllm.engine import connect

    server = connect(LEAD, record_for=lambda url: None)
    servers.k.pop(LEAD)  # the server goes away mid-test
    with pytest.raises(VllmError, match="cannot reach"):
        closed_loop(server, "speculative", [[1]], 4, 16, 6)


def test_a_server_that_ignores_exact_token_counts_is_refused(servers, monkeypatch):
    real_stream = FakeClient.stream

    def short(self, prompt_ids, max_tokens, **kwargs):
        return (yield from real_stream(self, prompt_ids, max_tokens - 1, **kwargs))

    monkeypatch.setattr(FakeClient, "stream", short)
    from specdec.vllm.engine import connect

    with pytest.raises(VllmError, match="asked for exactly 6"):
        closed_loop(connect(BASE, record_for=lambda url: None), "baseline", [[1]], 1, 1, 6)


# --- the rules, on made-up data ---------------------------------------------------------------------------------

def test_the_crossover_is_the_lowest_concurrency_whose_interval_lies_at_or_below_one():
    speedups = [{"concurrency": 1, "high": 1.4}, {"concurrency": 2, "high": 1.01}, {"concurrency": 4, "high": 1.0},
                {"concurrency": 8, "high": 1.2}, {"concurrency": 16, "high": 0.8}]
    assert crossover(speedups) == 4


def test_no_crossover_while_every_interval_reaches_above_one():
    assert crossover([{"concurrency": 1, "high": 2.0}, {"concurrency": 32, "high": 1.001}]) is None


def test_a_concurrency_without_an_interval_never_is_the_crossover():
    assert crossover([{"concurrency": 1, "high": None}, {"concurrency": 2, "high": 0.9}]) == 2


def _request(prompt, ids, tpot=0.01, steps=([], [])):
    return RequestRecord(prompt, ids, 0.0, 0.05, 0.05 + tpot * (len(ids) - 1), [len(ids)], [0.05], "length",
                         list(steps[0]), list(steps[1]))


def test_same_text_fails_when_one_request_differs_from_its_prompts_reference():
    reference = [[1, 2, 3], [4, 5, 6]]
    loops = {"speculative": [Loop("speculative", 2, [_request(0, [1, 2, 3]), _request(1, [4, 5, 7])], 1.0)],
             "baseline": [Loop("baseline", 2, [_request(0, [1, 2, 3]), _request(1, [4, 5, 6])], 1.0)]}
    level = Level(2, None, loops)
    spec, base = engine_row(level, "speculative", reference), engine_row(level, "baseline", reference)
    assert (spec["same_text"], spec["same_text_requests"]) == (False, 1)
    assert (base["same_text"], base["same_text_requests"]) == (True, 2)


def test_a_rows_throughput_is_the_median_of_its_loops_tokens_over_makespan():
    loops = {"speculative": [], "baseline": [Loop("baseline", 1, [_request(0, [1] * 10)], s) for s in (1.0, 2.0, 4.0)]}
    assert engine_row(Level(1, None, loops), "baseline", [[1] * 10])["output_tokens_per_s"] == pytest.approx(5.0)


def test_quantiles_interpolate_between_order_statistics():
    assert quantile([1, 2, 3, 4], 0.5) == pytest.approx(2.5)
    assert quantile(range(1, 101), 0.95) == pytest.approx(95.05)
    assert quantile([], 0.5) is None


def test_a_loop_has_every_prompt_and_every_client_its_rounds():
    settings = LoadSettings((1, 8), 16, rounds=2)
    assert settings.requests(1, 8) == 8 and settings.requests(8, 8) == 16


# --- bad input: one line each -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["1,x", "0,2", "", "1,1", "512"])
def test_a_bad_concurrency_list_is_one_line(text):
    with pytest.raises(VllmError, match="--concurrency"):
        parse_concurrencies(text)


def test_concurrencies_are_sorted():
    assert parse_concurrencies("4, 1,16") == (1, 4, 16)


def test_a_bad_concurrency_list_on_the_command_line_is_one_line(servers, prompts, capsys):
    assert "--concurrency" in one_line_error(capsys, "--vllm-url", LEAD, "--vllm-baseline-url", BASE,
                                              "--concurrency", "2,two", "--prompts-file", prompts)


def test_an_unreachable_server_is_one_line(prompts, capsys):
    line = one_line_error(capsys, "--vllm-url", "http://127.0.0.1:9", "--vllm-baseline-url", "http://127.0.0.1:9",
                          "--prompts-file", prompts)
    assert "cannot reach a vLLM server at http://127.0.0.1:9" in line


def test_a_server_on_another_machine_is_refused_before_any_request(servers, prompts, capsys):
    line = one_line_error(capsys, "--vllm-url", "http://10.1.2.3:8000", "--vllm-baseline-url", BASE,
                          "--prompts-file", prompts)
    assert "not on this machine" in line and servers.requests == []


def test_swapped_servers_are_one_line(servers, prompts, capsys):
    line = one_line_error(capsys, "--vllm-url", BASE, "--vllm-baseline-url", LEAD, "--prompts-file", prompts)
    assert "without speculative decoding" in line


def test_a_missing_prompts_file_is_one_line(servers, capsys, tmp_path):
    line = one_line_error(capsys, "--vllm-url", LEAD, "--vllm-baseline-url", BASE,
                          "--prompts-file", str(tmp_path / "none.json"))
    assert "--prompts-file" in line


@pytest.mark.parametrize("flag,value", [("--max-new-tokens", "1"), ("--pairs", "0"), ("--rounds", "99"),
                                        ("--settle-s", "-1")])
def test_an_out_of_range_number_is_one_line(servers, prompts, capsys, flag, value):
    assert flag in one_line_error(capsys, "--vllm-url", LEAD, "--vllm-baseline-url", BASE, "--prompts-file",
                                  prompts, flag, value)


# --- the lock around each level ---------------------------------------------------------------------------------

def _locked_elsewhere(path) -> bool:
    import fcntl

    with open(path, "a") as other:
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(other, fcntl.LOCK_UN)
        return False


def test_the_level_lock_is_held_while_a_level_runs_and_kept_while_the_hold_allows(tmp_path):
    from specdec.cli.load import LevelLock

    path = tmp_path / "cpu.lock"
    lock = LevelLock(str(path), hold_s=60.0)
    with lock.level():
        assert _locked_elsewhere(path)
    assert _locked_elsewhere(path)  # a quick level: the next one fits in the same hold
    lock.release()
    assert not _locked_elsewhere(path)


def test_the_level_lock_is_released_when_the_next_level_would_pass_the_hold(tmp_path):
    from specdec.cli.load import LevelLock

    path = tmp_path / "cpu.lock"
    lock = LevelLock(str(path), hold_s=0.0)
    with lock.level():
        assert _locked_elsewhere(path)
    assert not _locked_elsewhere(path)


def test_the_level_lock_is_released_when_a_level_fails(tmp_path):
    from specdec.cli.load import LevelLock

    path = tmp_path / "cpu.lock"
    lock = LevelLock(str(path), hold_s=60.0)
    with pytest.raises(VllmError):
        with lock.level():
            raise VllmError("the server went away")
    assert not _locked_elsewhere(path)


# --- dynamic K by batch size (vllm serve --k-by-batch) ---------------------------------------------------------

def test_k_by_batch_becomes_vllms_num_speculative_tokens_per_batch_size():
    from specdec.cli.vllm import parse_k_by_batch
    from specdec.vllm.launcher import ServeSpec

    schedule = parse_k_by_batch("1-2:4,3-8:2,9-256:0")
    assert schedule == ((1, 2, 4), (3, 8, 2), (9, 256, 0))
    config = ServeSpec(target="t", name="t", method="ngram", k=4, k_by_batch=schedule).speculative_config()
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 2, 4], [3, 8, 2], [9, 256, 0]]
    assert "num_speculative_tokens_per_batch_size" not in ServeSpec(target="t", name="t", method="ngram",
                                                                    k=4).speculative_config()


@pytest.mark.parametrize("text", ["2-8:4", "1-2:4,4-8:2", "1-2:4,3-8", "1-2:-1", "1-x:4", "1-2:4,3-2:1"])
def test_a_k_by_batch_schedule_vllm_would_refuse_is_one_line(text):
    from specdec.cli.vllm import parse_k_by_batch

    with pytest.raises(VllmError, match="--k-by-batch"):
        parse_k_by_batch(text)
