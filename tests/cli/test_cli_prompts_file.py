"""`python -m specdec generate --prompts-file FILE --json`: the file's prompts in order in one process with one drafter,
one JSON object per prompt (its place and its tokens per target forward), for every drafter."""
import json

from specdec.cli.main import main
from specdec.drafters import suffix

import pytest

CODE = "def area(w, h):\n    return w * h\n\ndef volume(w, h, d):\n    return w * h * d\n\n"


@pytest.fixture(autouse=True)
def fresh_stores(monkeypatch):
    monkeypatch.setattr(suffix, "STORES", {})


def run_file(capsys, path, draft, *extra):
    code = main(["generate", "--target", "lab-target", "--draft", draft, "--prompts-file", str(path), "--no-chat",
                 "--max-new-tokens", "24", "--k", "8", "--json", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line) for line in captured.out.splitlines()]


@pytest.mark.parametrize("draft", ["suffix", "prompt-lookup", "none"])
def test_a_json_list_of_prompts_gives_one_object_per_prompt_in_order(tmp_path, capsys, draft):
    path = tmp_path / "prompts.json"
    path.write_text(json.dumps(["x = 1\n", CODE, "y = 2\n"]))
    reports = run_file(capsys, path, draft)
    assert [r["request"] for r in reports] == [0, 1, 2]
    assert all(r["tokens_per_forward"] == r["metrics"]["tokens_per_forward"] >= 1 for r in reports)


def test_a_file_of_lines_gives_one_object_per_non_blank_line(tmp_path, capsys):
    path = tmp_path / "prompts.txt"
    path.write_text("x = 1\n\ny = 2\nz = 3\n")
    assert len(run_file(capsys, path, "prompt-lookup")) == 3


def test_the_suffix_drafter_learns_across_the_files_requests(tmp_path, capsys):
    path = tmp_path / "prompts.json"
    path.write_text(json.dumps([CODE, CODE]))
    first, second = run_file(capsys, path, "suffix")
    assert first["token_ids"] == second["token_ids"]
    assert second["tokens_per_forward"] > first["tokens_per_forward"]


@pytest.mark.parametrize("content, fragment", [("", "holds no prompts"), ("[1, 2]", "holds no prompts")])
def test_a_file_without_prompts_is_refused_in_one_line(tmp_path, capsys, content, fragment):
    path = tmp_path / "prompts.json"
    path.write_text(content)
    code = main(["generate", "--target", "lab-target", "--prompts-file", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and fragment in err
