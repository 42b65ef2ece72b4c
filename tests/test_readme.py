"""The README stays true: Space front matter matches the pins, and it gives exactly two set-up commands."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def front_matter() -> dict:
    block = README.split("---\n")[1]
    return dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(" "))


def test_space_sdk_version_equals_the_gradio_pin():
    pin = re.search(r"^gradio==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert front_matter()["sdk_version"] == pin


def test_space_app_file_exists():
    assert front_matter()["sdk"] == "gradio" and (ROOT / front_matter()["app_file"]).is_file()


def test_set_up_gives_one_app_command_and_one_test_command():
    set_up = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", set_up, re.S)
    assert commands == ["pip install -r requirements.txt && python app.py", "bash .ci/run"]


def test_ci_script_runs_pytest():
    assert "pytest" in (ROOT / ".ci" / "run").read_text()
