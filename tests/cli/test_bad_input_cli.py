"""Bad input to `python -m specdec generate`: every class gets exit status 2 and one line on stderr
that says what to change, never a traceback; unusual but valid Unicode just works."""
import os
import subprocess
import sys
from pathlib import Path

from specdec.cli.main import main

import pytest

from tests.bad_models import build_all

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("bad-cli"))


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(["generate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


def assert_one_line(code: int, err: str, fragment: str) -> None:
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err
    assert fragment in err, err


GOOD = ["--draft", "none", "--prompt-ids", "1,2,3"]

NUMBERS = [  # (arguments, what the line says)
    (["--temperature", "nan"], "--temperature must be a finite number from 0 to 100 (got nan)"),
    (["--temperature", "inf"], "--temperature must be a finite number from 0 to 100 (got inf)"),
    (["--temperature", "1e308"], "--temperature must be from 0 to 100"),
    (["--temperature", "-0.5"], "--temperature must be from 0 to 100 (got -0.5)"),
    (["--top-p", "nan"], "--top-p must be a finite number from 0 to 1"),
    (["--top-p", "2"], "--top-p must be from 0 to 1 (got 2)"),
    (["--top-p", "0"], "top-p must be in (0, 1]"),
    (["--top-k", "-2"], "--top-k must be of at least 0"),
    (["--k", "0"], "--k must be from 1 to 64 (got 0)"),
    (["--k", "100000000"], "--k must be from 1 to 64 (got 100000000)"),
    (["--max-new-tokens", "0"], "--max-new-tokens must be of at least 1"),
    (["--max-new-tokens", "many"], "argument --max-new-tokens: invalid int value"),
    (["--seed", "-1"], "--seed must be from 0 to 4294967295 (got -1)"),
    (["--seed", "99999999999999999999999"], "--seed must be from 0 to 4294967295"),
    (["--num-samples", "0"], "--num-samples must be from 1 to 10000"),
    (["--num-samples", "100000000"], "--num-samples must be from 1 to 10000 (got 100000000)"),
]


@pytest.mark.parametrize("args, fragment", NUMBERS, ids=[" ".join(a) for a, _ in NUMBERS])
def test_non_finite_or_out_of_range_numbers_get_one_line(folders, capsys, args, fragment):
    assert_one_line(*run(capsys, "--target", folders["good"], *GOOD, *args)[::2], fragment)


def test_prompt_ids_that_are_not_integers_get_one_line(folders, capsys):
    code, _, err = run(capsys, "--target", folders["good"], "--draft", "none", "--prompt-ids", "1,x")
    assert_one_line(code, err, "--prompt-ids must be comma-separated integers")


def test_prompt_ids_outside_the_vocabulary_get_one_line(folders, capsys):
    code, _, err = run(capsys, "--target", folders["good"], "--draft", "none", "--prompt-ids", "1,99999999999999")
    assert_one_line(code, err, "Prompt token ids out of range 0..95")


def test_a_length_beyond_the_context_is_refused_before_running(folders, capsys):
    code, _, err = run(capsys, "--target", folders["good"], *GOOD, "--max-new-tokens", "1000")
    assert_one_line(code, err, "exceeds")
    assert "context of 256 tokens: lower max new tokens to 253" in err


def test_a_length_beyond_memory_is_refused_before_allocating(folders, capsys):
    code, _, err = run(capsys, "--target", folders["long_context"], *GOOD, "--max-new-tokens", "100000000000")
    assert_one_line(code, err, "of KV cache for")
    assert "free on cpu: lower max new tokens or K, or shorten the prompt" in err


WEIGHTS = [  # (folder, what the line says)
    ("truncated", "weights are damaged or incomplete"),
    ("garbage", "weights are damaged or incomplete"),
    ("empty_weights", "weights are damaged or incomplete"),
    ("missing_tensor", "weights are incomplete: 1 tensor(s) missing from its safetensors"),
    ("wrong_shape", "weights do not match its config.json"),
    ("damaged_config", "config.json is damaged"),
    ("no_weights", "has no .safetensors weights"),
]


@pytest.mark.parametrize("folder, fragment", WEIGHTS, ids=[f for f, _ in WEIGHTS])
def test_missing_corrupt_or_truncated_weights_get_one_line(folders, capsys, folder, fragment):
    assert_one_line(*run(capsys, "--target", folders[folder], *GOOD)[::2], fragment)


def test_a_missing_folder_gets_one_line(tmp_path, capsys):
    assert_one_line(*run(capsys, "--target", str(tmp_path / "absent"), *GOOD)[::2], "No model folder")


NOT_CAUSAL = [
    ("encoder_only", "is an encoder-only (masked language) model (BertForMaskedLM)"),
    ("vision", "is a vision or multimodal model (ViTModel)"),
    ("encoder_decoder", "is an encoder-decoder (sequence-to-sequence) model"),
]


@pytest.mark.parametrize("folder, fragment", NOT_CAUSAL, ids=[f for f, _ in NOT_CAUSAL])
def test_a_folder_holding_something_other_than_a_causal_lm_is_refused(folders, capsys, folder, fragment):
    code, _, err = run(capsys, "--target", folders[folder], *GOOD)
    assert_one_line(code, err, fragment)
    assert "needs a decoder-only model" in err


def test_a_tokenizer_without_an_unknown_token_says_it_cannot_encode_the_prompt(folders, capsys):
    code, _, err = run(capsys, "--target", folders["no_unknown_token"], "--draft", "none", "--prompt", "the dog")
    assert_one_line(code, err, "tokenizer cannot encode this prompt: WordLevel error: Missing [UNK] token")


def test_a_chat_template_that_refuses_the_prompt_gets_one_line(folders, capsys):
    code, _, err = run(capsys, "--target", folders["refusing_chat_template"], "--draft", "none", "--prompt", "the cat")
    assert_one_line(code, err, "cannot encode this prompt in its chat template: This model has no chat format")


@pytest.mark.parametrize("prompt", ["🦀 emoji 🎉 and ∑ maths", "مرحبا بالعالم שלום", "a\x00b\x07c\x1b[31m\u202eevil",
                                    "e\u0301\u200d\ufeff"], ids=["emoji", "right-to-left", "control", "combining"])
def test_unusual_unicode_prompts_generate(capsys, prompt):
    code, out, err = run(capsys, "--target", "lab-target", "--draft", "lab-draft-distilled", "--prompt", prompt,
                         "--max-new-tokens", "6")
    assert code == 0 and out.strip() and "Traceback" not in err


def test_a_prompt_that_is_not_valid_utf8_gets_one_line(capsys):
    code, _, err = run(capsys, "--target", "lab-target", "--draft", "none", "--prompt", "abc\udcff")
    assert_one_line(code, err, "--prompt is not valid UTF-8 (byte 0xff at character 4)")


def test_invalid_utf8_bytes_on_a_real_command_line_get_one_line():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "specdec", "generate", "--target", "lab-target", "--draft", "none",
                           "--prompt", b"\xff\xfe caf\xe9"], capture_output=True, env=env, cwd=ROOT, timeout=300)
    err = proc.stderr.decode("utf-8", "replace").strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "not valid UTF-8 (byte 0xff" in err


def test_a_model_name_that_is_not_text_gets_one_line(capsys):
    assert_one_line(*run(capsys, "--target", "lab-target\udcff", *GOOD)[::2], "--target is not valid UTF-8")


def test_a_device_that_does_not_exist_gets_one_line(folders, capsys):
    code, _, err = run(capsys, "--target", folders["good"], *GOOD, "--device", "tpu")
    assert_one_line(code, err, "Unknown device 'tpu'")
