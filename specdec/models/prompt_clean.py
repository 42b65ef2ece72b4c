"""Collapse stray spaces and tabs in a prompt before tokenising, and say what changed.

Stray whitespace changes tokenisation (a trailing space makes the model start mid-word, two spaces
become a rare token), which lowers acceptance for reasons that have nothing to do with the draft.
Leading indentation is kept: it is meaningful in code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_INNER_RUN = re.compile(r"(?<=\S)[ \t\u00a0]{2,}(?=\S)|(?<=\S)[\t\u00a0](?=\S)")
_TRAILING = re.compile(r"[ \t\u00a0]+$")


@dataclass(frozen=True)
class CleanResult:
    text: str
    changes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def summary(self) -> str:
        return "; ".join(self.changes) if self.changes else "nothing to clean up"


def _clean_line(line: str) -> tuple[str, int, bool]:
    """Returns the cleaned line, how many inner runs were collapsed, whether trailing space went."""
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)]
    stripped = _TRAILING.sub("", body)
    trailing = stripped != body
    collapsed, runs = _INNER_RUN.subn(" ", stripped)
    return indent + collapsed, runs, trailing


def clean_prompt(text: str) -> CleanResult:
    """Collapses runs of spaces/tabs inside lines and drops trailing spaces/tabs on every line."""
    lines = text.split("\n")
    cleaned, runs, trailing_lines = [], 0, []
    for number, line in enumerate(lines, start=1):
        new, line_runs, trailing = _clean_line(line)
        cleaned.append(new)
        runs += line_runs
        if trailing:
            trailing_lines.append(number)
    changes = []
    if runs:
        changes.append(f"collapsed {runs} run{'s' if runs != 1 else ''} of spaces/tabs inside lines")
    if trailing_lines:
        where = ", ".join(str(n) for n in trailing_lines[:8]) + ("…" if len(trailing_lines) > 8 else "")
        changes.append(f"removed trailing spaces/tabs on line{'s' if len(trailing_lines) != 1 else ''} {where}")
    return CleanResult("\n".join(cleaned), changes)
