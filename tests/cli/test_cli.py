"""The CLI is a stable interface: JSON shape, samples, baseline, bench, and one-line errors."""
import json
import os
import subprocess
import sys
from pathlib import Path

from specdec.cli.main import main

import pytest

from tests.tiny_models import build_model, perturbed_copy, save, tiny_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    target = build_model(tiny_config("llama"), seed=0)
    return save(target, root / "target"), save(perturbed_copy(target, 0.3, seed=1), root / "draft")


def run_json(capsys, *args):
    assert main(["generate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_generate_json_has_the_documented_fields(pair, capsys):
    target, draft = pair
    report = run_json(capsys, "--target", target, "--draft", draft, "--prompt-ids", "1,2,3", "--max-new-tokens", "12")
    assert len(report["token_ids"]) == 12 and report["text"] is None  # folder without tokenizer
    assert report["steps"] and {"drafted", "emitted_ids", "final"} <= set(report["steps"][0])
    assert {"acceptance_rate", "tokens_per_forward", "target_forwards", "wall_time_s",
            "tokens_per_s"} <= set(report["metrics"])


def test_draft_none_runs_the_baseline(pair, capsys):
    report = run_json(capsys, "--target", pair[0], "--draft", "none", "--prompt-ids", "1,2,3", "--max-new-tokens", "5")
    assert report["draft"] is None and report["metrics"]["acceptance_rate"] is None
    assert report["metrics"]["target_forwards"] == 5


def test_num_samples_gives_independent_draws_from_one_seed(pair, capsys):
    target, draft = pair
    args = ["--target", target, "--draft", draft, "--prompt-ids", "1,2,3", "--max-new-tokens", "10",
            "--temperature", "1.0", "--seed", "5", "--num-samples", "4"]
    samples = run_json(capsys, *args)["samples"]
    assert len(samples) == 4 and len({tuple(s) for s in samples}) > 1
    assert run_json(capsys, *args)["samples"] == samples


@pytest.mark.parametrize("args", [
    ["--prompt-ids", "1,x"],
    ["--prompt-ids", "1,2", "--k", "0"],
    ["--prompt-ids", "1,2", "--top-p", "2"],
    ["--prompt-ids", "1,2", "--max-new-tokens", "many"],
    ["--prompt", "   "],
])
def test_bad_arguments_exit_nonzero_with_one_line(pair, capsys, args):
    assert main(["generate", "--target", pair[0], "--draft", "none", *args]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_module_entry_point_reports_errors_without_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "specdec", "generate", "--target", str(tmp_path / "nothing"),
                           "--draft", "none", "--prompt", "hi"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().startswith("error: No model folder") and "Traceback" not in proc.stderr


def test_bench_reports_all_four_engines_and_identity(pair, capsys):
    target, draft = pair
    assert main(["bench", "--target", target, "--draft", draft, "--prompt-ids", "1,2,3", "--k", "3",
                 "--max-new-tokens", "16", "--repeats", "1"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [e["engine"] for e in report["engines"]] == [
        "ours: target only", "ours: speculative", "ours: spec. + top-5 trace", "transformers: generate",
        "transformers: assisted"]
    assert report["greedy_identical"] is True
    assert all(e["new_tokens"] == 16 for e in report["engines"])


def test_prompt_lookup_is_a_draft_name(pair, capsys):
    report = run_json(capsys, "--target", pair[0], "--draft", "prompt-lookup", "--prompt-ids", "1,2,3,1,2",
                      "--max-new-tokens", "8")
    assert report["draft"] == "prompt-lookup" and len(report["token_ids"]) == 8


def test_generate_without_a_draft_uses_prompt_lookup_on_a_target_no_preset_names(pair, capsys):
    report = run_json(capsys, "--target", pair[0], "--prompt-ids", "1,2,3,1,2", "--max-new-tokens", "4")
    assert report["draft"] == "prompt-lookup"


def test_generate_without_a_draft_uses_the_first_draft_of_the_targets_preset(capsys):
    report = run_json(capsys, "--target", "lab-target", "--prompt-ids", "5,17,42", "--max-new-tokens", "4")
    assert report["draft"] == "lab-draft-distilled"


def test_k_schedule_is_recorded_in_the_settings(pair, capsys):
    target, draft = pair
    report = run_json(capsys, "--target", target, "--draft", draft, "--prompt-ids", "1,2,3", "--max-new-tokens",
                      "8", "--k-schedule", "heuristic")
    assert report["settings"]["k_schedule"] == "heuristic" and "k_planned" in report["steps"][0]


def test_a_prompt_longer_than_the_context_is_refused_with_one_line(pair, capsys):
    ids = ",".join(["1"] * 250)  # the tiny models read 256 positions
    assert main(["generate", "--target", pair[0], "--draft", "none", "--prompt-ids", ids,
                 "--max-new-tokens", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "context of 256 tokens" in err
