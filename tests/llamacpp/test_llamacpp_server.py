"""llama.cpp run as the comparison runs it, where it is built (`python -m specdec llamacpp setup`) and the fetched
SmolLM2 file is here; skipped, saying which is missing, elsewhere. Slow (tests/conftest.py): each test starts
llama.cpp's processes."""
from __future__ import annotations

import json

from specdec.cli.main import main
from specdec.llamacpp import build, export, server

import pytest

BUILT = build.unavailable_reason()
pytestmark = pytest.mark.skipif(bool(BUILT), reason=BUILT)


@pytest.fixture(scope="module")
def q4_1_file():
    from specdec.models.gguf_files import ensure_gguf

    try:
        return ensure_gguf("smollm2-135m-instruct", "q4_1")
    except Exception as exc:  # offline, nothing fetched
        pytest.skip(f"the fetched SmolLM2 GGUF is not available: {exc}")


def test_llama_bench_reports_one_rate_a_repetition(q4_1_file):
    rates = server.llama_bench(q4_1_file, threads=1, tokens=8, repetitions=2, warmup=False)
    assert len(rates) == 2 and all(rate > 0 for rate in rates)


def test_a_server_generates_exactly_the_tokens_asked_for_past_the_end_of_text(q4_1_file):
    with server.LlamaServer(q4_1_file, threads=2) as running:
        done = running.complete([1, 9690, 198, 2683], 12)  # <|im_start|>system\nYou ...
    assert len(done.token_ids) == 12 and done.timings["predicted_n"] == 12 and done.timings["prompt_n"] == 4


def test_the_zoo_draft_drafts_for_llamacpp_and_its_drafts_are_counted(q4_1_file):
    from specdec.models.fetch import cached_folder

    draft = export.draft_gguf(cached_folder("smollm2-135m-instruct"))
    config = server.SpecConfig("draft model K=3", "draft-simple", draft, 3)
    with server.LlamaServer(q4_1_file, threads=2, spec=config) as running:
        done = running.complete([1, 9690, 198, 2683], 24)
    assert len(done.token_ids) == 24 and done.drafted > 0 and 0 <= done.accepted <= done.drafted


def test_bench_vs_llamacpp_prints_the_ratios_measured_side_by_side(q4_1_file, capsys, tmp_path):
    out = tmp_path / "vs.json"
    code = main(["bench", "--vs", "llama.cpp", "--llama-bench", "--llamacpp-spec", "ngram-simple", "--draft",
                 "prompt-lookup", "--ks", "2", "--max-new-tokens", "12", "--repeats", "1", "--json-out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(out.read_text())
    names = {row["engine"] for row in report["engines"]}
    assert {"lab target-only [Q4_1]", "llama.cpp target-only [Q4_1]", "llama-bench tg [Q4_1]",
            "lab prompt-lookup K=2 [Q4_1]", "llama.cpp ngram-simple [Q4_1]"} <= names
    assert report["same_token_counts"] and report["lab_identical"]
    assert "lab target-only [Q4_1] / llama-bench tg [Q4_1]" in captured.out
