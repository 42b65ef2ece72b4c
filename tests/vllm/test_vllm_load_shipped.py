"""The load measurement shipped with the app (assets/measurements/vllm-load.json, specdec/vllm/load_shipped.py): its
labels, what it holds, and the rules read from it (the dynamic K rule, the curves, the model beside them)."""
from __future__ import annotations

import copy
import json

from specdec.errors import SpecDecError
from specdec.measure import cost_model as cm
from specdec.measure.device_presets import PRESETS
from specdec.vllm.load_report import crossover, csv_text
from specdec.vllm.load_shipped import (
    SHIPPED,
    combine,
    curves,
    dynamic_rule,
    k_by_batch_text,
    label_problems,
    model_curve,
    read_measurement,
)

import pytest

SMOLLM2 = cm.Network("smollm2-135m-instruct", layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64,
                     intermediate=1536, head_rows=49152)


@pytest.fixture(scope="module")
def shipped():
    return read_measurement()


def test_the_shipped_measurement_names_its_machine_commands_date_and_notebook_entry(shipped):
    assert label_problems(shipped) == []
    assert "cores" in shipped["machine"] and shipped["date"][:4].isdigit()
    assert all(c.startswith("python -m specdec load ") for c in shipped["commands"])
    assert (SHIPPED.parent.parent.parent / shipped["notebook"]).is_file()


def test_every_shipped_run_carries_its_labels_and_a_gapless_table_from_one_request_and_one_reaches_32(shipped):
    """A run may stop early (the shipped EAGLE-3 run ends at 16: docs/notebook/2026-12-07-vllm-under-load.md), never
    skip a level; the tab draws each run over the levels it has."""
    ladder, reached = [1, 2, 4, 8, 16, 32], []
    for run in shipped["runs"]:
        assert run["machine"] == shipped["machine"] and run["command"] in shipped["commands"]
        levels = sorted({r["concurrency"] for r in run["rows"]})
        assert levels == ladder[:len(levels)] and len(levels) >= 5
        assert all(s["repeats"] >= 6 and s["low"] is not None for s in run["speedups"])
        reached.append(levels[-1])
    assert 32 in reached


def test_the_shipped_measurement_has_at_least_two_methods(shipped):
    assert len({run["speculative"]["method"] for run in shipped["runs"]}) >= 2


def test_each_shipped_crossover_follows_the_rule_from_its_own_intervals(shipped):
    for run in shipped["runs"]:
        assert run["crossover"] == crossover(run["speedups"])


def test_the_shipped_dynamic_rule_is_the_one_its_runs_give(shipped):
    assert shipped["dynamic_rule"] == json.loads(json.dumps(dynamic_rule(shipped["runs"])))


def test_a_measurement_without_its_labels_is_refused(shipped, tmp_path):
    unlabelled = copy.deepcopy(shipped)
    del unlabelled["machine"]
    unlabelled["runs"][0]["command"] = ""
    problems = label_problems(unlabelled)
    assert "no machine" in problems and any("lacks its own" in p for p in problems)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(unlabelled))
    with pytest.raises(SpecDecError, match="not labelled"):
        read_measurement(path)


def test_runs_from_two_machines_are_not_combined(shipped):
    other = copy.deepcopy(shipped["runs"][0])
    other["machine"] = "another CPU, 64 cores"
    with pytest.raises(SpecDecError, match="2 machines"):
        combine([shipped["runs"][0], other], "docs/notebook/x.md")


def test_the_curves_give_each_engine_and_the_speedup_per_concurrency(shipped):
    series = curves(shipped["runs"][0])
    n = len(series["concurrency"])
    for key in ("speculative_output_tokens_per_s", "baseline_output_tokens_per_s", "baseline_tpot_ms_p50",
                "speedup", "low", "high"):
        assert len(series[key]) == n
    assert series["crossover"] == shipped["runs"][0]["crossover"]


def test_the_csv_export_has_every_row_of_every_run(shipped):
    lines = csv_text(shipped["runs"]).strip().splitlines()
    assert len(lines) == 1 + sum(len(run["rows"]) for run in shipped["runs"])


def test_the_model_curve_for_a_run_starts_at_its_measured_single_request_step(shipped, monkeypatch):
    monkeypatch.setattr(cm, "target_network", lambda name: SMOLLM2)
    monkeypatch.setattr(cm, "draft_shape", lambda name, target: cm.DraftShape(name, "draft", None))
    run = shipped["runs"][0]
    curve = model_curve(run, PRESETS["t4"], "float16", concurrencies=(1, 2, 4, 8, 16, 32))
    baseline_tpot = next(r for r in run["rows"] if r["engine"] == "baseline" and r["concurrency"] == 1)["tpot_ms_p50"]
    assert curve.points[0].target_step.time_s * 1e3 == pytest.approx(baseline_tpot)
    assert [p.concurrency for p in curve.points] == [1, 2, 4, 8, 16, 32]


# --- the dynamic rule on made-up curves ---------------------------------------------------------------------------

def _run(method, k, speedups):
    return {"speculative": {"method": method, "k": k},
            "speedups": [{"concurrency": c, "speedup": m, "low": lo, "high": hi} for c, m, lo, hi in speedups]}


def test_the_dynamic_rule_takes_the_best_paying_k_and_turns_speculation_off_where_none_pays():
    runs = [_run("eagle3", 4, [(1, 1.8, 1.6, 1.9), (4, 1.1, 0.98, 1.2), (16, 0.8, 0.7, 0.9)]),
            _run("eagle3", 2, [(1, 1.5, 1.4, 1.6), (4, 1.2, 1.1, 1.3), (16, 0.9, 0.85, 0.95)])]
    choices = dynamic_rule(runs)["eagle3"]["choices"]
    assert [(c["concurrency"], c["k"]) for c in choices] == [(1, 4), (4, 2), (16, 0)]
    assert dynamic_rule(runs)["eagle3"]["k_by_batch"] == "1-3:4,4-15:2,16-256:0"


def test_the_rule_over_every_method_picks_the_best_method_at_each_concurrency():
    runs = [_run("ngram", 4, [(1, 1.1, 1.05, 1.2), (8, 1.05, 1.01, 1.1)]),
            _run("eagle3", 3, [(1, 1.7, 1.6, 1.8), (8, 0.9, 0.8, 0.95)])]
    choices = dynamic_rule(runs)["any method"]["choices"]
    assert [(c["concurrency"], c["method"], c["k"]) for c in choices] == [(1, "eagle3", 3), (8, "ngram", 4)]


def test_a_schedule_of_zeros_needs_no_speculative_server():
    assert k_by_batch_text([(1, 0), (8, 0)]) is None
    assert k_by_batch_text([(1, 3), (2, 3), (8, 0)]) == "1-7:3,8-256:0"
