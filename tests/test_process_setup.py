"""One process-wide set-up (specdec/process.py) for every entry point: the CLI and the app run under the same
OpenMP wait policy and so choose the same measured path."""
import json
import os
import subprocess
import sys
from pathlib import Path

from specdec.runners import tuning

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP_PATH = """
import json, sys
import app  # the app's entry module, as `python app.py` imports it
from specdec import load_model
from specdec.process import describe_process
print(json.dumps({"process": describe_process(), "path": load_model("lab-target").tuned.to_dict()}))
"""


def clean_env(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "SPECDEC_STEP_THREADS", "SPECDEC_TUNING",
                                                            "SPECDEC_RECORDS")}
    return {**env, "SPECDEC_CACHE": str(cache), "PYTHONPATH": str(ROOT)}


def run(args, env) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def records(cache: Path) -> list[dict]:
    return list(json.loads((cache / "tuning.json").read_text())["records"].values())


@pytest.mark.parametrize("first_import", ["import specdec", "import specdec.cli.main", "import specdec.ui.launch"])
def test_every_entry_point_sets_the_passive_wait_policy_before_torch(tmp_path, first_import):
    code = f"{first_import}; import os, json; from specdec.process import describe_process; " \
           "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), describe_process()]))"
    policy, state = json.loads(run(["-c", code], clean_env(tmp_path)))
    assert policy == "PASSIVE" and state["applied"] and state["omp_wait_policy"] == "PASSIVE"


def test_after_torch_the_set_up_changes_nothing_and_says_so(tmp_path):
    code = "import torch, specdec, os, json; from specdec.process import describe_process; " \
           "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), describe_process()]))"
    policy, state = json.loads(run(["-c", code], clean_env(tmp_path)))
    assert policy is None and not state["applied"] and "torch was imported before specdec" in state["reason"]


def test_an_operators_policy_is_kept(tmp_path):
    code = "import specdec, os; print(os.environ['OMP_WAIT_POLICY'])"
    assert run(["-c", code], {**clean_env(tmp_path), "OMP_WAIT_POLICY": "ACTIVE"}).strip() == "ACTIVE"


def test_the_cli_and_the_app_choose_the_same_path(tmp_path):
    env = clean_env(tmp_path)
    cli = run(["-m", "specdec", "tune", "--target", "lab-target"], env)
    (measured,) = records(tmp_path)
    app = json.loads(run(["-c", APP_PATH], env))
    assert app["process"]["omp_wait_policy"] == measured["key"]["omp_wait_policy"] == "PASSIVE"
    assert app["path"] == measured  # same key, so the app found the CLI's measurement instead of measuring again
    assert f"chosen: {tuning.TunedPath.from_dict(measured).label}:" in cli
