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


def test_layout_block_names_every_package_folder_and_only_paths_that_exist():
    """README's "## Layout" block against the tree: each line starts with a path from the repository root. Every
    folder under specdec/ that holds Python modules (plus runners/native/, the C kernels) and every top-level part
    of the project must be named, and every path named must exist, so a new package folder, or a moved one, fails."""
    layout = README.split("\n## Layout", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```text\n(.*?)\n```", layout, re.S).group(1)
    named = [line.split()[0] for line in block.splitlines() if line.strip()]
    assert [path for path in named if not all((ROOT / p).exists() for p in expand(path))] == []
    listed = {p.rstrip("/") for path in named for p in expand(path)}
    packages = {folder.relative_to(ROOT).as_posix() for folder in (ROOT / "specdec").rglob("*")
                if folder.is_dir() and any(folder.glob("*.py"))}
    required = packages | {"specdec", "specdec/runners/native", "app.py", "training", "experiments", "assets",
                           "tests", "docs"}
    assert sorted(required - listed) == []


def expand(path: str) -> list[str]:
    """A Layout path with a <placeholder> folder ("specdec/ui/tabs/<tab>/") names every package folder in its place
    (none: [], so a placeholder that matches nothing is a path that does not exist); any other path, itself."""
    if "<" not in path:
        return [path]
    pattern = re.sub(r"<[^>/]+>", "*", path.rstrip("/"))
    return sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern) if p.is_dir() and any(p.glob("*.py"))) \
        or [path]


def test_a_placeholder_in_the_layout_names_every_folder_in_its_place():
    assert "specdec/ui/tabs/generate" in expand("specdec/ui/tabs/<tab>/")
    assert "specdec/ui/tabs/__pycache__" not in expand("specdec/ui/tabs/<tab>/")
    assert expand("specdec/nowhere/<x>/") == ["specdec/nowhere/<x>/"]
