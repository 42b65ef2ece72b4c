"""Deterministic offline corpus: Python stdlib source (code) and bundled docs + docstrings (prose).

Both come with every CPython installation under the PSF License 2.0. File lists are sorted and
the held-out split is chosen by a CRC of the relative path, so the split never depends on order,
machine or Python hash seeds.
"""
from __future__ import annotations

import ast
import collections
import sysconfig
import zlib
from dataclasses import dataclass, field
from pathlib import Path

LICENCE = "PSF License 2.0 (Python Software Foundation License Version 2)"
SOURCE_DESCRIPTION = (
    "Python source code from the CPython standard library shipped with this Python "
    "(tests, encodings tables and pydoc_data excluded) and English prose from Python's bundled "
    "documentation topics (pydoc_data.topics) plus docstrings extracted from the same modules"
)
EXCLUDED_PARTS = frozenset({
    "site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__",
    "encodings", "pydoc_data", "lib2to3", "ensurepip", "turtledemo",
})
MAX_FILE_CHARS = 400_000
MIN_DOCSTRING_CHARS = 160
HELD_OUT_EVERY = 40


@dataclass
class Corpus:
    code_train: list[str] = field(default_factory=list)
    code_heldout: list[str] = field(default_factory=list)
    prose_train: list[str] = field(default_factory=list)
    prose_heldout: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            split: {"documents": len(docs), "chars": sum(len(d) for d in docs)}
            for split, docs in vars(self).items()
        }


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def is_held_out(key: str, every: int = HELD_OUT_EVERY) -> bool:
    """A stable, order-independent split: about 1 in ``every`` keys is held out."""
    return zlib.crc32(key.encode("utf-8")) % every == 0


def list_code_files(root: Path, max_files: int | None = None) -> list[Path]:
    files = sorted(
        p for p in root.rglob("*.py")
        if not EXCLUDED_PARTS.intersection(p.relative_to(root).parts)
    )
    if max_files is not None and len(files) > max_files:
        stride = len(files) / max_files
        files = [files[int(i * stride)] for i in range(max_files)]
    return files


def read_source(path: Path) -> str:
    text = path.read_bytes().decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").strip() + "\n"


def extract_docstrings(source: str) -> list[str]:
    """Module, class and function docstrings long enough to read as prose."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = (ast.get_docstring(node, clean=True) for node in walk_statements(tree) if isinstance(node, kinds))
    return [d.strip() for d in docs if d and len(d) >= MIN_DOCSTRING_CHARS]


STATEMENT_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def walk_statements(tree: ast.AST):
    """ast.walk's nodes (breadth first, in the same order) that are statements or hold statements: a definition
    never sits inside an expression, so the expressions, most of a tree, need not be visited."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        todo.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, STATEMENT_HOLDERS))
        yield node


def read_topic_documents(max_topics: int | None = None) -> list[tuple[str, str]]:
    from pydoc_data.topics import topics

    keys = sorted(topics)[:max_topics]
    return [(f"topic:{k}", topics[k].strip() + "\n") for k in keys]


def add_document(corpus: Corpus, kind: str, key: str, text: str, every: int) -> None:
    split = "heldout" if is_held_out(key, every) else "train"
    getattr(corpus, f"{kind}_{split}").append(text)


def build_corpus(max_code_files: int | None = None, max_topics: int | None = None,
                 heldout_every: int = HELD_OUT_EVERY) -> Corpus:
    root = stdlib_root()
    corpus = Corpus()
    for path in list_code_files(root, max_code_files):
        key = path.relative_to(root).as_posix()
        source = read_source(path)
        if len(source) > MAX_FILE_CHARS or len(source) < 40:
            continue
        add_document(corpus, "code", key, source, heldout_every)
        for doc in extract_docstrings(source):
            add_document(corpus, "prose", key, doc + "\n", heldout_every)
    for key, text in read_topic_documents(max_topics):
        add_document(corpus, "prose", key, text, heldout_every)
    return corpus
