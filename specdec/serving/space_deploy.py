"""`python -m specdec deploy --space OWNER/NAME`: uploads a snapshot of the working tree to a Hugging Face Space.

The Hub refuses a git push that carries binary files outside LFS/Xet, and any file over 10 MB outside
them; this repository keeps its weights as plain git blobs (its clones and CI need the real files), so
its history cannot be pushed. Instead the Space's file set (app.py, the package, the assets, the
requirements, the README with its front matter, .gitattributes) is copied into a staging folder and
sent with huggingface_hub's upload_folder, which routes binaries through LFS/Xet itself.

Each file's route is decided as git would decide it for a fresh history: `filter=lfs` in
.gitattributes (parsed here, so no git-lfs or git is needed) means LFS/Xet, anything else is a plain
text upload. The content decides what a file is (a NUL byte or invalid UTF-8: binary). A binary routed
as text, or a text file over 10 MB, is refused before anything is sent (docs/deploy.md).
"""
from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from specdec.errors import SpecDecError, first_line
from specdec.paths import REPO_ROOT

ROOT = REPO_ROOT
TEXT_LIMIT_BYTES = 10 * 1000 * 1000  # the Hub refuses larger files outside LFS/Xet
SPACE_FILES = ("app.py", "README.md", "requirements.txt", ".gitattributes")
SPACE_FOLDERS = ("specdec", "assets")
OPTIONAL_FOLDERS = ("tests", "experiments", "training", "docs")  # only with --include
SKIPPED_PARTS = {"__pycache__", ".pytest_cache"}
HARDWARE = ("cpu-basic", "cpu-upgrade", "zero-a10g", "t4-small", "t4-medium", "l4x1", "a10g-small",
            "a10g-large", "a100-large")
LFS = "LFS/Xet"
TEXT = "text"


class DeployError(SpecDecError):
    """The file set breaks a rule of the Hub, or the upload cannot be made; one line."""


@dataclass(frozen=True)
class SpaceFile:
    path: str  # relative to the repository root, with forward slashes
    size: int
    binary: bool
    route: str  # LFS or TEXT

    def problem(self) -> str | None:
        """Why the Hub would refuse this file, or None."""
        if self.binary and self.route != LFS:
            return (f"{self.path} is a binary file not routed through LFS/Xet: add its pattern to .gitattributes "
                    "with filter=lfs diff=lfs merge=lfs -text")
        if self.route == TEXT and self.size > TEXT_LIMIT_BYTES:
            return f"{self.path} is {format_size(self.size)}, over the Hub's 10 MB for files outside LFS/Xet"
        return None


# --- routes from .gitattributes -------------------------------------------------------------------------

def parse_lfs_patterns(text: str) -> list[tuple[str, bool]]:
    """(pattern, routed through LFS) for each .gitattributes line that sets or unsets `filter`."""
    rules = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        for attribute in fields[1:]:
            if attribute == "filter=lfs":
                rules.append((fields[0], True))
            elif attribute.startswith("filter=") or attribute in ("-filter", "!filter"):
                rules.append((fields[0], False))
    return rules


def matches(pattern: str, path: str) -> bool:
    """gitattributes matching: a pattern without a slash matches the file name at any depth; one with
    a slash matches the path from the root (`**/` any folders)."""
    if "/" not in pattern.rstrip("/"):
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    pattern = pattern.lstrip("/")
    return fnmatch.fnmatchcase(path, pattern) or (pattern.startswith("**/") and fnmatch.fnmatchcase(path, pattern[3:]))


def route_of(path: str, rules: list[tuple[str, bool]]) -> str:
    """The last matching line wins, as in git."""
    routed = False
    for pattern, lfs in rules:
        if matches(pattern, path):
            routed = lfs
    return LFS if routed else TEXT


def is_binary(data: bytes) -> bool:
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# --- the file set -----------------------------------------------------------------------------------------

def candidate_paths(root: Path, include: Iterable[str] = ()) -> list[str]:
    """The files the Space needs: tracked files when root is a git checkout (so nothing untracked or
    ignored travels), else every file under the chosen folders."""
    folders = (*SPACE_FOLDERS, *include)
    tracked = git_tracked(root)
    if tracked is None:
        tracked = [p.relative_to(root).as_posix() for folder in folders if (root / folder).is_dir()
                   for p in sorted((root / folder).rglob("*")) if p.is_file()]
        tracked += [name for name in SPACE_FILES if (root / name).is_file()]
    wanted = [p for p in tracked if p in SPACE_FILES or p.split("/", 1)[0] in folders]
    return sorted(p for p in wanted if (root / p).is_file() and not SKIPPED_PARTS & set(p.split("/")))


def git_tracked(root: Path) -> list[str] | None:
    try:
        done = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout:
        return None
    return [p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def build_file_set(root: Path = ROOT, include: Iterable[str] = ()) -> list[SpaceFile]:
    root = Path(root)
    attributes = root / ".gitattributes"
    rules = parse_lfs_patterns(attributes.read_text()) if attributes.is_file() else []
    files = []
    for path in candidate_paths(root, include):
        data = (root / path).read_bytes()
        files.append(SpaceFile(path, len(data), is_binary(data), route_of(path, rules)))
    return files


def check_file_set(files: list[SpaceFile], root: Path = ROOT) -> list[str]:
    """Every reason the Hub, or the Space's runtime, would refuse this set (empty: fine)."""
    problems = [p for f in files if (p := f.problem())]
    names = {f.path for f in files}
    for required in ("app.py", "README.md", "requirements.txt"):
        if required not in names:
            problems.append(f"the Space needs {required}, which is missing")
    if "README.md" in names:
        requirements = (Path(root) / "requirements.txt").read_text() if "requirements.txt" in names else ""
        problems += front_matter_problems((Path(root) / "README.md").read_text(), requirements)
    return problems


def front_matter_problems(readme: str, requirements: str) -> list[str]:
    block = re.match(r"---\n(.*?)\n---\n", readme, re.S)
    if block is None:
        return ["README.md has no front matter (--- … ---): the Space needs sdk, sdk_version and app_file"]
    fields = dict(line.split(": ", 1) for line in block.group(1).splitlines()
                  if ": " in line and not line.startswith(" "))
    problems = []
    if fields.get("sdk") != "gradio":
        problems.append(f"README.md front matter: sdk must be gradio (got {fields.get('sdk')!r})")
    pin = re.search(r"^gradio==(\S+)$", requirements, re.M)
    if pin and fields.get("sdk_version") != pin.group(1):
        problems.append(f"README.md front matter: sdk_version {fields.get('sdk_version')!r} differs from the "
                        f"gradio pin {pin.group(1)} in requirements.txt")
    if fields.get("app_file") != "app.py":
        problems.append(f"README.md front matter: app_file must be app.py (got {fields.get('app_file')!r})")
    return problems


def format_size(size: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def listing(files: list[SpaceFile]) -> str:
    width = max(len(format_size(f.size)) for f in files)
    lines = [f"{format_size(f.size):>{width}}  {f.route:<7}  {f.path}" for f in files]
    lfs = [f for f in files if f.route == LFS]
    lines.append(f"{len(files)} files, {format_size(sum(f.size for f in files))}: "
                 f"{len(files) - len(lfs)} text ({format_size(sum(f.size for f in files if f.route == TEXT))}), "
                 f"{len(lfs)} through LFS/Xet ({format_size(sum(f.size for f in lfs))})")
    return "\n".join(lines)


def stage(files: list[SpaceFile], root: Path, into: Path) -> Path:
    """Copies exactly the file set into `into` (what upload_folder sends)."""
    for f in files:
        target = into / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(root) / f.path, target)
    return into


# --- the upload -------------------------------------------------------------------------------------------

def default_api(token: str):
    from huggingface_hub import HfApi

    return HfApi(token=token)


def find_token() -> str | None:
    """HF_TOKEN, else the token `hf auth login` stored (huggingface_hub's own lookup)."""
    from huggingface_hub import get_token

    return get_token()


def upload(space: str, staging: Path, *, hardware: str | None, private: bool, api) -> str:
    """Creates the Space if needed and commits the staged folder as one commit; returns the commit URL."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        api.create_repo(space, repo_type="space", space_sdk="gradio", space_hardware=hardware,
                        private=private, exist_ok=True)
        if hardware:  # an existing Space keeps its hardware unless asked
            api.request_space_hardware(space, hardware)
        commit = api.upload_folder(repo_id=space, repo_type="space", folder_path=str(staging),
                                   commit_message="Deploy SpecDec Lab (python -m specdec deploy)",
                                   delete_patterns="*")  # files of an earlier snapshot that are gone now
    except HfHubHTTPError as exc:
        raise DeployError(f"the Hub refused the upload to {space}: {first_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 (connection, DNS, TLS, timeouts, anything else: one line each)
        if is_network_error(exc):
            raise DeployError(f"could not reach the Hugging Face Hub to upload {space}: {first_line(exc)}") from None
        raise DeployError(f"the upload to {space} failed: {type(exc).__name__}: {first_line(exc)}") from None
    return str(getattr(commit, "commit_url", commit))


def is_network_error(exc: BaseException) -> bool:
    """OSError (socket, DNS) or an error of the HTTP library huggingface_hub uses (it changed across versions)."""
    return isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in {"httpx", "httpx2", "requests", "urllib3"}


def check_space_name(space: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}", space or ""):
        raise DeployError(f"--space must be OWNER/NAME (got {space!r})")


def deploy(space: str, *, hardware: str | None = None, private: bool = False, dry_run: bool = False,
           include: Iterable[str] = (), root: Path = ROOT, api_factory: Callable | None = None,
           token_finder: Callable | None = None, out: Callable[[str], None] = print) -> int:
    """Builds and checks the file set; prints it (dry run) or uploads it. Raises DeployError.
    api_factory(token) -> an HfApi and token_finder() -> a token or None default to huggingface_hub's."""
    check_space_name(space)
    files = build_file_set(root, include)
    problems = check_file_set(files, root)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise DeployError(f"the Space's file set would be refused: {problems[0]}{more}")
    if dry_run:
        out(listing(files))
        out(f"dry run: nothing uploaded; `python -m specdec deploy --space {space}` sends these files to the Space")
        return 0
    token = (token_finder or find_token)()
    if not token:
        raise DeployError("no Hugging Face token: set HF_TOKEN or run `hf auth login`, then deploy again")
    out(listing(files))
    with tempfile.TemporaryDirectory(prefix="specdec-space-") as folder:
        url = upload(space, stage(files, root, Path(folder)), hardware=hardware, private=private,
                     api=(api_factory or default_api)(token))
    out(f"uploaded {len(files)} files to https://huggingface.co/spaces/{space} ({url})")
    return 0


def add_deploy_parser(commands) -> None:
    """The `deploy` subcommand (registered by specdec/cli/deploy.py)."""
    parser = commands.add_parser("deploy", help="upload a snapshot of this working tree to a Hugging Face Space")
    parser.add_argument("--space", required=True, help="OWNER/NAME of the Space (created if it does not exist)")
    parser.add_argument("--hardware", default=None, choices=HARDWARE,
                        help="Space hardware (default: the Hub's, cpu-basic)")
    parser.add_argument("--private", action="store_true", help="create the Space private")
    parser.add_argument("--dry-run", action="store_true", help="list the files, sizes and routes; upload nothing")
    parser.add_argument("--include", action="append", default=[], choices=OPTIONAL_FOLDERS,
                        help="also send this folder (repeatable)")


def run_deploy(args) -> int:
    return deploy(args.space, hardware=args.hardware, private=args.private, dry_run=args.dry_run,
                  include=args.include)
