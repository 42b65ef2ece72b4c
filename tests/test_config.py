"""The one configuration surface (specdec/config.py): every SPECDEC_* variable declared once, read through
config.get when it is needed, a bad value refused in one line, and docs/configuration.md showing the same table."""
import re
from pathlib import Path

from specdec import config
from specdec.errors import InvalidSettingsError

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "specdec").rglob("*.py")) + [ROOT / "app.py"]
NAME = re.compile(r"SPECDEC_[A-Z][A-Z0-9_]*")
# a read that bypasses config: os.environ["SPECDEC_…"], os.environ.get / os.getenv / env.get("SPECDEC_…")
DIRECT_READ = re.compile(r"""(environ\[|getenv\(|(?<!config)\.get\()\s*["']SPECDEC_""")


def test_the_configuration_page_shows_the_declared_table():
    assert config.markdown_table() in (ROOT / "docs" / "configuration.md").read_text()


def test_every_specdec_variable_the_package_names_is_declared():
    named = {name for path in SOURCES for name in NAME.findall(path.read_text())}
    assert named - set(config.VARIABLES) == set()


def test_no_module_but_config_reads_a_specdec_variable_from_the_environment():
    direct = [f"{path.relative_to(ROOT)}:{number}" for path in SOURCES if path.name != "config.py"
              for number, line in enumerate(path.read_text().splitlines(), 1) if DIRECT_READ.search(line)]
    assert direct == []


@pytest.mark.parametrize("name", list(config.VARIABLES))
def test_each_variable_is_read_by_the_module_its_row_names(name):
    assert f'"{name}"' in (ROOT / config.VARIABLES[name].read_by).read_text()


def test_an_unset_or_blank_variable_gives_its_default():
    assert config.get("SPECDEC_PRELOAD", {}) is True and config.get("SPECDEC_PRELOAD", {"SPECDEC_PRELOAD": "  "}) is True


def test_a_variable_is_read_when_asked_not_at_import(monkeypatch):
    monkeypatch.setenv("SPECDEC_TUNING", "0")
    assert config.get("SPECDEC_TUNING") is False
    monkeypatch.setenv("SPECDEC_TUNING", "1")
    assert config.get("SPECDEC_TUNING") is True


@pytest.mark.parametrize("text, value", [("1", True), ("TRUE", True), ("yes", True), (" On ", True),
                                         ("0", False), ("false", False), ("No", False), ("OFF", False)])
def test_one_flag_parser_reads_every_on_and_off_word(text, value):
    assert config.get("SPECDEC_SHARE", {"SPECDEC_SHARE": text}) is value


@pytest.mark.parametrize("name, text, accepts", [
    ("SPECDEC_SHARE", "maybe", "one of 1, true, yes, on, 0, false, no, off"),
    ("SPECDEC_PORT", "70000", "a port number from 1 to 65535"),
    ("SPECDEC_QUEUE_SIZE", "many", "a finite number of at least 1, or 0, none or off (no limit)"),
    ("SPECDEC_MODEL_CACHE_GB", "-2", "a finite number above 0, or auto (the engine chooses)"),
], ids=["flag", "port", "limit", "automatic-limit"])
def test_a_bad_value_is_one_line_naming_the_variable_and_what_it_accepts(name, text, accepts):
    with pytest.raises(InvalidSettingsError) as refused:
        config.get(name, {name: text})
    assert str(refused.value) == f"{name} must be {accepts} (got {text!r})"


def test_a_flag_that_takes_a_variables_values_names_itself_in_the_error():
    with pytest.raises(InvalidSettingsError, match=r"^--queue-size must be a finite number of at least 1"):
        config.parse("SPECDEC_QUEUE_SIZE", "-1", "--queue-size")


def test_an_undeclared_variable_is_a_programming_error_not_a_default():
    with pytest.raises(KeyError, match="SPECDEC_NOPE is not declared"):
        config.get("SPECDEC_NOPE")
