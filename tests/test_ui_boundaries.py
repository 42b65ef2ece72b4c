"""Package boundaries: only specdec.ui imports gradio or plotly, and the UI never touches torch."""
import re
from pathlib import Path

SPECDEC = Path(__file__).resolve().parent.parent / "specdec"


def imports_of(path: Path) -> set[str]:
    text = path.read_text()
    return set(re.findall(r"^\s*(?:from|import)\s+([a-zA-Z_][\w]*)", text, flags=re.MULTILINE))


def test_only_the_ui_package_imports_gradio_or_plotly():
    offenders = [str(p.relative_to(SPECDEC)) for p in SPECDEC.rglob("*.py")
                 if "ui" not in p.relative_to(SPECDEC).parts and imports_of(p) & {"gradio", "plotly"}]
    assert offenders == []


def test_the_ui_never_imports_torch():
    offenders = [p.name for p in (SPECDEC / "ui").rglob("*.py") if "torch" in imports_of(p)]
    assert offenders == []

