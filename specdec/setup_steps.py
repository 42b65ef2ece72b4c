"""One step of a once-per-machine set-up (the vLLM venv's pip install, llama.cpp's cmake and ninja): a command whose
output is appended to the set-up's log, and whose failure, timeout or missing program becomes one error line naming
the step, how it failed and the log, never a traceback."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable


def run_logged_step(command: list[str], log: Path, what: str, runner, *, product: str, timeout_s: int,
                    error: Callable[[str], Exception], is_error_line: Callable[[str], bool]) -> None:
    """Runs `command` through `runner` (subprocess.run, or a stand-in in tests) with its output appended to `log`;
    raises error("setting up <product> failed: <what> ...") when it cannot start, runs past timeout_s or exits
    non-zero (then with the log's last line that is_error_line picks)."""
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            done = runner(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise error(f"setting up {product} failed: {what} took over {timeout_s // 60} minutes (log {log})") from None
        except OSError as exc:
            raise error(f"setting up {product} failed: {what}: {exc}") from None
    if done.returncode != 0:
        raise error(f"setting up {product} failed: {what} exited with {done.returncode}: "
                    f"{last_error(log, is_error_line)} (log {log})")


def last_error(log: Path, is_error_line: Callable[[str], bool]) -> str:
    """The log's last line that is_error_line picks, else its last line."""
    lines = [line.strip() for line in Path(log).read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if is_error_line(line)]
    return (errors or lines or ["no output"])[-1][:300]
