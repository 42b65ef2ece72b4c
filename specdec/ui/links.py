"""References to the project's docs (docs/*.md) as links that work where the app runs: a deployment leaves docs/
out, so each becomes a link under SPECDEC_DOCS_URL (the project's repository) when its operator set one, and
stays a plain name otherwise (never a link to a page that is not there)."""
from __future__ import annotations

import re

from specdec import config

DOC_PATH = re.compile(r"(?<!\]\()(?<![\w/\[`])(docs/[\w./-]*?\.md)(?![\w\]])")


def docs_base() -> str:
    return (config.get("SPECDEC_DOCS_URL") or "").rstrip("/")


def link_docs(markdown: str, base: str | None = None) -> str:
    """Markdown with every bare docs/<name>.md turned into a link under `base` (default: SPECDEC_DOCS_URL)."""
    base = docs_base() if base is None else base.rstrip("/")
    if not base:
        return markdown
    return DOC_PATH.sub(lambda m: f"[{m.group(1)}]({base}/{m.group(1)})", markdown)
