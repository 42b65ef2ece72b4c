"""vLLM's suffix method through the launcher: accepted where the venv imports arctic_inference, otherwise refused in
one line before any server starts. The venv is a stand-in (a script running this interpreter): no vLLM needed."""
from __future__ import annotations

import json
import sys

from specdec.vllm.client import VllmError
from specdec.vllm.launcher import ServeSpec, check_method, server_command

import pytest


def stand_in_venv(tmp_path, with_arctic: bool):
    """bin/python of a venv that runs this interpreter, with a module arctic_inference on its path or without."""
    modules = tmp_path / "site"
    modules.mkdir()
    if with_arctic:
        (modules / "arctic_inference.py").write_text("")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\nPYTHONPATH={modules} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    return python


def test_the_suffix_method_is_refused_in_one_line_where_arctic_inference_is_not_importable(tmp_path):
    with pytest.raises(VllmError) as refused:
        check_method(stand_in_venv(tmp_path, with_arctic=False), "suffix")
    message = str(refused.value)
    assert "\n" not in message and "arctic-inference" in message and "--method ngram" in message


def test_the_suffix_method_is_accepted_where_arctic_inference_is_importable(tmp_path):
    check_method(stand_in_venv(tmp_path, with_arctic=True), "suffix")


def test_a_suffix_server_is_started_with_method_suffix_and_no_draft(tmp_path):
    command = server_command(tmp_path / "python", ServeSpec(target="t", name="t", method="suffix", k=16), 8000)
    config = json.loads(command[command.index("--speculative-config") + 1])
    assert config == {"method": "suffix", "num_speculative_tokens": 16}
