"""`python -m specdec deploy`: the Space's file set follows the Hub's rules (checked without the Hub), and the
upload path, driven through a fake HfApi, ends every failure with one line and exit status 2."""
import shutil
import subprocess
import types
from pathlib import Path

from specdec.cli import main as cli
from specdec.serving import space_deploy
from specdec.serving.space_deploy import LFS, TEXT, DeployError, build_file_set, check_file_set, deploy

import pytest
from huggingface_hub.errors import HfHubHTTPError
from safetensors import safe_open

ROOT = Path(__file__).resolve().parents[2]
FRONT_MATTER = "---\ntitle: t\nsdk: gradio\nsdk_version: 6.31.0\napp_file: app.py\n---\n\n# t\n"


def tracked(pattern: str) -> list[str]:
    return subprocess.run(["git", "-C", str(ROOT), "ls-files", pattern], capture_output=True, text=True,
                          check=True).stdout.split()


def small_repository(root: Path, gitattributes: str = "*.safetensors filter=lfs diff=lfs merge=lfs -text\n") -> Path:
    """A folder (not a git checkout) shaped like this repository, with one binary in assets."""
    (root / "specdec").mkdir(parents=True)
    (root / "assets").mkdir()
    (root / "tests").mkdir()
    (root / "app.py").write_text("print('app')\n")
    (root / "README.md").write_text(FRONT_MATTER)
    (root / "requirements.txt").write_text("gradio==6.31.0\n")
    (root / ".gitattributes").write_text(gitattributes)
    (root / "specdec" / "__init__.py").write_text("")
    (root / "tests" / "test_x.py").write_text("")
    (root / "assets" / "weights.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    return root


# --- this repository's file set ---------------------------------------------------------------------------

def test_this_repositorys_file_set_breaks_no_hub_rule():
    files = build_file_set(ROOT)
    assert check_file_set(files, ROOT) == []
    assert all(f.route == LFS for f in files if f.binary)
    assert all(f.size <= space_deploy.TEXT_LIMIT_BYTES for f in files if f.route == TEXT)


def test_the_file_set_holds_the_app_the_package_the_assets_and_no_tests_experiments_training_or_docs():
    paths = {f.path for f in build_file_set(ROOT)}
    assert {"app.py", "README.md", "requirements.txt", ".gitattributes", "specdec/ui/layout.py"} <= paths
    assert set(tracked("assets")) <= paths
    assert not {p for p in paths if p.split("/")[0] in ("tests", "experiments", "training", "docs", ".ci")}


def test_include_adds_a_folder_on_request():
    paths = {f.path for f in build_file_set(ROOT, include=["docs"])}
    assert "docs/deploy.md" in paths and not any(p.startswith("tests/") for p in paths)


def test_every_binary_in_the_repository_is_routed_through_lfs_by_gitattributes():
    files = {f.path: f for f in build_file_set(ROOT)}
    binaries = [p for p in tracked("assets") if files[p].binary]
    assert {p.rsplit(".", 1)[-1] for p in binaries} == {"safetensors", "png"}
    assert all(files[p].route == LFS for p in binaries)


def test_routes_agree_with_git_check_attr():
    files = build_file_set(ROOT)
    out = subprocess.run(["git", "-C", str(ROOT), "check-attr", "filter", "--", *[f.path for f in files]],
                         capture_output=True, text=True, check=True).stdout
    git_routes = {line.split(": ")[0]: line.split(": ")[-1] for line in out.splitlines()}
    assert {f.path: f.route for f in files} == {p: LFS if v == "lfs" else TEXT for p, v in git_routes.items()}


def test_tracked_safetensors_are_real_weights_not_lfs_pointers():
    paths = tracked("*.safetensors")
    # every lab model (config.json) and every zoo entry with weights of its own (zoo.json) ships them
    owners = {str(Path(p).parent) for p in tracked("assets/models/*/config.json") + tracked("assets/drafters/*/zoo.json")}
    assert {str(Path(p).parent) for p in paths} == owners and len(owners) >= 9
    for path in paths:
        assert not (ROOT / path).read_bytes()[:40].startswith(b"version https://git-lfs"), path
        with safe_open(str(ROOT / path), framework="pt") as weights:
            assert list(weights.keys()), path


# --- the rules catch what the Hub refuses ------------------------------------------------------------------

def test_an_unrouted_binary_is_refused_before_anything_is_sent(tmp_path):
    root = small_repository(tmp_path)
    (root / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    problems = check_file_set(build_file_set(root), root)
    assert len(problems) == 1 and problems[0].startswith("assets/logo.png is a binary file not routed through LFS/Xet")
    with pytest.raises(DeployError, match="assets/logo.png is a binary file"):
        deploy("someone/specdec-lab", dry_run=True, root=root, out=lambda line: None)


def test_a_binary_is_recognised_by_its_content_not_its_name(tmp_path):
    root = small_repository(tmp_path)
    (root / "assets" / "notes.txt").write_bytes("caf\xe9".encode("latin-1"))  # not UTF-8
    assert [f.binary for f in build_file_set(root) if f.path == "assets/notes.txt"] == [True]
    assert check_file_set(build_file_set(root), root)[0].startswith("assets/notes.txt is a binary file")


def test_a_text_file_over_10_mb_outside_lfs_is_refused(tmp_path):
    root = small_repository(tmp_path)
    (root / "assets" / "big.json").write_text("0" * (space_deploy.TEXT_LIMIT_BYTES + 1))
    assert check_file_set(build_file_set(root), root) == \
        ["assets/big.json is 10.0 MB, over the Hub's 10 MB for files outside LFS/Xet"]


def test_a_readme_whose_sdk_version_differs_from_the_gradio_pin_is_refused(tmp_path):
    root = small_repository(tmp_path)
    (root / "README.md").write_text(FRONT_MATTER.replace("6.31.0", "5.0.0"))
    assert check_file_set(build_file_set(root), root) == \
        ["README.md front matter: sdk_version '5.0.0' differs from the gradio pin 6.31.0 in requirements.txt"]


# --- the command -------------------------------------------------------------------------------------------

def test_dry_run_lists_every_file_with_size_and_route_and_the_total(capsys):
    assert cli.main(["deploy", "--space", "someone/specdec-lab", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    files = build_file_set(ROOT)
    assert len(lines) == len(files) + 2
    assert any(line.split() == ["14.2", "MB", "LFS/Xet", "assets/drafters/smollm2-135m-draft/model.safetensors"]
               for line in lines)
    assert lines[-2].startswith(f"{len(files)} files, ") and "through LFS/Xet" in lines[-2]


class FakeHub:
    """Records the calls an upload makes; `fail` is raised by upload_folder."""

    def __init__(self, fail: BaseException | None = None):
        self.fail, self.calls, self.uploaded = fail, [], None

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def request_space_hardware(self, repo_id, hardware):
        self.calls.append(("request_space_hardware", repo_id, hardware))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs["repo_id"], kwargs))
        if self.fail:
            raise self.fail
        folder = Path(kwargs["folder_path"])
        self.uploaded = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        return "https://huggingface.co/spaces/someone/specdec-lab/commit/abc"


def run_deploy_command(monkeypatch, capsys, hub: FakeHub, token: str | None = "hf_test", *flags: str):
    monkeypatch.setattr(space_deploy, "find_token", lambda: token)
    monkeypatch.setattr(space_deploy, "default_api", lambda token: hub)
    code = cli.main(["deploy", "--space", "someone/specdec-lab", *flags])
    return code, capsys.readouterr()


def test_no_token_gives_one_line_and_exit_2(monkeypatch, capsys):
    hub = FakeHub()
    code, out = run_deploy_command(monkeypatch, capsys, hub, None)
    assert code == 2 and out.err == "error: no Hugging Face token: set HF_TOKEN or run `hf auth login`, then deploy again\n"
    assert hub.calls == [] and out.out == ""


def test_a_network_error_gives_one_line_and_exit_2(monkeypatch, capsys):
    code, out = run_deploy_command(monkeypatch, capsys, FakeHub(ConnectionError("[Errno -3] Temporary failure in "
                                                                                 "name resolution")))
    assert code == 2 and out.err == ("error: could not reach the Hugging Face Hub to upload someone/specdec-lab: "
                                     "[Errno -3] Temporary failure in name resolution\n")


def test_an_unexpected_failure_of_the_upload_gives_one_line_and_exit_2(monkeypatch, capsys):
    code, out = run_deploy_command(monkeypatch, capsys, FakeHub(ValueError("Invalid repo id\nsecond line")))
    assert code == 2 and out.err == "error: the upload to someone/specdec-lab failed: ValueError: Invalid repo id\n"


def test_a_refused_upload_gives_one_line_and_exit_2(monkeypatch, capsys):
    response = types.SimpleNamespace(status_code=403, headers={}, request=None)  # all HfHubHTTPError reads of it
    refusal = HfHubHTTPError("403 Forbidden: you do not have write access to someone/specdec-lab.\nmore detail",
                             response=response)
    code, out = run_deploy_command(monkeypatch, capsys, FakeHub(refusal))
    assert code == 2 and out.err == ("error: the Hub refused the upload to someone/specdec-lab: 403 Forbidden: you "
                                     "do not have write access to someone/specdec-lab.\n")


def test_a_successful_upload_sends_exactly_the_file_set_to_a_gradio_space(monkeypatch, capsys):
    hub = FakeHub()
    code, out = run_deploy_command(monkeypatch, capsys, hub, "hf_test", "--hardware", "zero-a10g", "--private")
    assert code == 0 and out.err == ""
    assert hub.uploaded == [f.path for f in build_file_set(ROOT)]
    (_, space, create), (_, _, hardware), (_, _, upload) = hub.calls
    assert space == "someone/specdec-lab" and hardware == "zero-a10g"
    assert create == {"repo_type": "space", "space_sdk": "gradio", "space_hardware": "zero-a10g", "private": True,
                      "exist_ok": True}
    assert upload["repo_type"] == "space" and upload["repo_id"] == "someone/specdec-lab"
    assert out.out.splitlines()[-1].startswith("uploaded ")


def test_a_bad_space_name_is_a_usage_line(capsys):
    assert cli.main(["deploy", "--space", "no-owner", "--dry-run"]) == 2
    assert capsys.readouterr().err == "error: --space must be OWNER/NAME (got 'no-owner')\n"


def test_a_snapshot_without_git_is_built_from_its_folders(tmp_path):
    root = small_repository(tmp_path)
    shutil.rmtree(root / "tests")
    assert [f.path for f in build_file_set(root)] == [".gitattributes", "README.md", "app.py",
                                                      "assets/weights.safetensors", "requirements.txt",
                                                      "specdec/__init__.py"]
