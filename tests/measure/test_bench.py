"""`python -m specdec bench`: ours vs transformers for no drafter, prompt lookup and a draft model,
each comparison a median ratio with its interval (specdec.measure.speedup's statistics)."""
import json

from specdec.cli.main import main
from specdec.measure.bench import Sample, compare, drafter_mode

import pytest

from tests.tiny_models import build_model, perturbed_copy, save, tiny_config


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    target = build_model(tiny_config("llama"), seed=0)
    return save(target, root / "target"), save(perturbed_copy(target, 0.3, seed=1), root / "draft")


def bench(capsys, *args) -> dict:
    assert main(["bench", "--prompt-ids", "1,2,3", "--k", "3", "--max-new-tokens", "12", *args]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_without_a_draft_it_compares_our_target_only_run_with_transformers_generate(pair, capsys):
    report = bench(capsys, "--target", pair[0], "--repeats", "1")
    assert report["mode"] == "target-only" and report["draft"] == "none"
    assert [e["engine"] for e in report["engines"]] == ["ours: target only", "transformers: generate"]
    assert [(c["engine"], c["reference"]) for c in report["comparisons"]] == [
        ("ours: target only", "transformers: generate")]


def test_draft_none_is_the_same_as_no_draft(pair, capsys):
    assert bench(capsys, "--target", pair[0], "--draft", "none", "--repeats", "1")["mode"] == "target-only"


def test_prompt_lookup_is_compared_with_transformers_prompt_lookup(pair, capsys):
    report = bench(capsys, "--target", pair[0], "--draft", "prompt-lookup", "--repeats", "1")
    assert report["mode"] == "prompt-lookup" and report["greedy_identical"] is True
    assert ("ours: prompt lookup", "transformers: prompt lookup") in [
        (c["engine"], c["reference"]) for c in report["comparisons"]]


def test_a_draft_model_is_compared_with_assisted_generation_and_every_run_makes_the_same_tokens(pair, capsys):
    report = bench(capsys, "--target", pair[0], "--draft", pair[1], "--repeats", "1")
    assert report["mode"] == "draft-model" and report["greedy_identical"] is True
    assert all(e["new_tokens"] == 12 for e in report["engines"])
    assert report["ours_vs_hf_assisted"] == report["comparisons"][0]["ratio"]


def test_six_repeats_give_each_comparison_a_95_percent_interval(pair, capsys):
    report = bench(capsys, "--target", pair[0], "--repeats", "6")
    (comparison,) = report["comparisons"]
    assert comparison["repeats"] == 6 and comparison["low"] <= comparison["ratio"] <= comparison["high"]
    assert "95% interval" in comparison["description"]


def test_a_comparison_is_the_median_of_per_repeat_ratios():
    samples = {"a": [Sample([1] * 10, 1.0, 10, 1.0, None)] * 3 + [Sample([1] * 10, 0.5, 10, 0.5, None)] * 3,
               "b": [Sample([1] * 10, 2.0, 10, 2.0, None)] * 6}
    result = compare(samples, "a", "b")
    assert result.ratio == pytest.approx(3.0) and result.repeats == 6 and result.verdict == "faster"


def test_drafters_without_a_transformers_counterpart_are_refused():
    class Head:
        name = "some-eagle-head"
    with pytest.raises(ValueError, match="no transformers counterpart"):
        drafter_mode(Head())
