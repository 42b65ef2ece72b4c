"""The fast tier (`-m "not slow"`) is named in one place, tests/conftest.py: its names must stay real, and the
everyday loop must keep the correctness checks it promises."""
import re
from pathlib import Path

import pytest

import tests.conftest as conftest

TESTS = Path(__file__).resolve().parent


def defined_test_names() -> set[str]:
    return {name for path in TESTS.rglob("test_*.py")
            for name in re.findall(r"^def (test_\w+)\(", path.read_text(encoding="utf-8"), re.M)}


def test_every_test_named_slow_exists():
    assert conftest.SLOW_TESTS <= defined_test_names(), conftest.SLOW_TESTS - defined_test_names()


def test_every_single_slow_test_and_kept_case_names_a_test_that_exists():
    named = {name.split("[")[0] for name in conftest.SLOW_SINGLE_TESTS} | set(conftest.FAST_CASES)
    assert named <= defined_test_names(), named - defined_test_names()


def named_cases() -> dict[str, str]:
    """Every case named in the tiers, name -> id: FAST_CASES' kept cases and SLOW_SINGLE_TESTS' "name[id]"."""
    single = dict(entry[:-1].split("[", 1) for entry in conftest.SLOW_SINGLE_TESTS if entry.endswith("]"))
    return {**conftest.FAST_CASES, **single}


def test_each_named_case_is_one_the_test_is_collected_with():
    cases = {name: case for name, case in named_cases().items() if name in conftest.COLLECTED_CASES}
    if not cases:
        pytest.skip("no module with a named case was collected in this run")
    missing = {name: case for name, case in cases.items() if case not in conftest.COLLECTED_CASES[name]}
    assert not missing, missing


def test_slow_modules_name_existing_files():
    assert any(conftest.SLOW_MODULES.fullmatch(path.stem) for path in TESTS.rglob("test_*.py"))


def test_the_fast_tier_keeps_greedy_identity_and_a_chi_square_test():
    fast_modules = {path.stem for path in TESTS.rglob("test_*.py") if not conftest.SLOW_MODULES.fullmatch(path.stem)}
    assert {"test_engine_greedy_identity", "test_distribution_paths", "test_verifier", "test_lossless"} <= fast_modules
    law_tests = re.findall(r"^def (test_every_token_of_a_long_run_follows_the_target_law)\(",
                           (TESTS / "engine" / "test_distribution_paths.py").read_text(encoding="utf-8"), re.M)
    assert law_tests and not set(law_tests) & conftest.SLOW_TESTS
    assert set(law_tests) <= set(conftest.FAST_CASES)  # run in the fast tier on its kept case
