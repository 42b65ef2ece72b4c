"""`python -m specdec bench --suite` (specdec/measure/bench_suite.py): this machine's table, with the machine named."""
import json

from specdec.cli.main import main

import pytest


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECDEC_RECORDS", raising=False)  # the records in this cache


def run_suite(capsys, tmp_path, drafts: str, *more: str) -> tuple[list[str], dict]:
    out = tmp_path / "suite.json"
    code = main(["bench", "--suite", "--target", "lab-target", "--draft", drafts, "--repeats", "1",
                 "--max-new-tokens", "4", "--json-out", str(out), *more])
    assert code == 0
    return capsys.readouterr().out.splitlines(), json.loads(out.read_text())


def test_the_suite_names_the_machine_and_the_chosen_path(capsys, tmp_path):
    lines, report = run_suite(capsys, tmp_path, "lab-draft-tiny")
    assert lines[0].startswith("CPU: ") and "memory read" in lines[0] and "GB/s on 1 thread" in lines[0]
    assert lines[1].startswith("path: float32") and "OMP_WAIT_POLICY" in lines[1]
    assert report["cpu"] in lines[0] and all(gb > 0 for gb in report["bandwidth_gb_s"].values())


def test_the_suite_has_a_row_for_transformers_and_one_per_drafter(capsys, tmp_path):
    lines, report = run_suite(capsys, tmp_path, "lab-draft-tiny,prompt-lookup")
    table = [line for line in lines if line.startswith("| ")]
    header, rows = table[0], table[1:]
    assert header.count("|") - 1 == 9 and all(r.count("|") == header.count("|") for r in rows)
    assert [r.split(" | ")[0:2] for r in rows] == [["| ours: target only", "transformers: generate"],
                                                  ["| ours: lab-draft-tiny", "ours: target only"],
                                                  ["| ours: prompt-lookup", "ours: target only"]]
    assert all(r["identical"] for r in report["rows"])  # greedy: every engine emits the same tokens


def test_a_drafter_that_cannot_load_is_listed_not_fatal(capsys, tmp_path):
    lines, report = run_suite(capsys, tmp_path, "lab-draft-tiny,no-such-drafter")
    assert len(report["rows"]) == 2 and any(line.startswith("not run: no-such-drafter") for line in lines)


def test_a_drafter_whose_interval_lies_below_one_is_marked_slower_here():
    from specdec.measure.bench import Sample
    from specdec.measure.bench_suite import SuiteReport, format_suite, row

    def runs(seconds):
        return [Sample([1, 2, 3, 4], s, 2, s, None) for s in seconds]

    samples = {"ours: x": runs([1.4, 1.5, 1.45, 1.6, 1.42, 1.5]), "ours: target only": runs([1.0, 1.1, 0.95, 1.0, 1.05, 1.0])}
    slow = row(samples, "ours: x", "ours: target only", 4)
    fast = row(samples, "ours: target only", "ours: x", 4)
    assert slow.slower_here and not fast.slower_here
    report = SuiteReport("cpu", 2, {"1": 10.0}, "float32", "t", "cpu", "float32", 3, 4, 6,
                         {"torch": "t", "transformers": "t"}, "PASSIVE", [slow, fast])
    assert [line.split(" | ")[7] for line in format_suite(report).splitlines()[-2:]] == ["slower here", "faster"]


def test_each_drafter_runs_at_its_auto_k_unless_k_is_given(capsys, tmp_path):
    _, auto = run_suite(capsys, tmp_path, "lab-draft-tiny")
    _, fixed = run_suite(capsys, tmp_path, "lab-draft-tiny", "--k", "3")
    assert [r["k"] for r in auto["rows"]] == [None, "auto"] and [r["k"] for r in fixed["rows"]] == [None, 3]


def test_the_default_list_starts_with_the_auto_drafter_at_auto_k():
    from argparse import Namespace

    from specdec.measure.bench_suite import suite_drafters

    drafts = suite_drafters(Namespace(draft=None, target="smollm2-135m-instruct", k="auto"))
    assert drafts[0] == "auto" and drafts.count("auto") == 1 and len(drafts) > 1
    assert "auto" not in suite_drafters(Namespace(draft=None, target="smollm2-135m-instruct", k=4))


def test_bench_without_the_suite_refuses_k_auto_with_one_line(capsys):
    assert main(["bench", "--target", "lab-target", "--k", "auto"]) == 2
    assert "--k auto is --suite's" in capsys.readouterr().err
