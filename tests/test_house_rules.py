"""The house's rules that a grep can check: the code states contracts and reasons, and dated measurements live in
docs/notebook/ (no date in specdec/); the package is installed, so nothing but tests/conftest.py edits sys.path;
modules and pages stay a size a newcomer reads (issue 48's limits)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATE = re.compile(r"\b20\d\d-[01]\d(-[0-3]\d)?\b")  # 2026-12-06 or 2026-12


def test_no_module_of_the_package_names_a_date():
    found = {str(p.relative_to(ROOT)): DATE.search(p.read_text()) for p in (ROOT / "specdec").rglob("*.py")}
    assert {name: match.group(0) for name, match in found.items() if match} == {}


def test_nothing_but_the_tests_conftest_edits_sys_path():
    python = [p for folder in ("specdec", "training", "experiments", "tests") for p in (ROOT / folder).rglob("*.py")]
    python += list(ROOT.glob("*.py"))
    editing = [str(p.relative_to(ROOT)) for p in python
               if re.search(r"sys\.path\.(insert|append)|sys\.path\s*=", p.read_text())]
    assert editing in ([], ["tests/conftest.py"])


def test_the_date_pattern_finds_a_notebook_name_and_a_month():
    assert DATE.search("docs/notebook/2026-12-06-suffix-decoding.md") and DATE.search("shipped until 2026-12")


def test_no_module_of_the_package_is_over_400_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "specdec").rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 400} == {}


def test_the_readme_stays_under_200_lines_and_no_doc_page_outside_the_notebook_over_600():
    pages = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "docs").glob("*.md")}
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
    assert {name: n for name, n in pages.items() if n > 600} == {}
