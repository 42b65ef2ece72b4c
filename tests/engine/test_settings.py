"""DecodeSettings and its check (specdec/engine/events.py): what a generation can run, every problem in one error."""
from specdec.engine.events import K_SCHEDULES, DecodeSettings, check_settings
from specdec.engine.schedules import SCHEDULES
from specdec.errors import InvalidSettingsError

import pytest


def test_the_default_settings_pass_the_check():
    check_settings(DecodeSettings())


def test_every_problem_is_named_in_one_error():
    with pytest.raises(InvalidSettingsError) as refused:
        check_settings(DecodeSettings(max_new_tokens=0, k=0, temperature=float("nan"), top_k=-1, top_p=0.0,
                                      k_schedule="fastest"))
    assert [problem.split(" must")[0] for problem in str(refused.value).split("; ")] == [
        "max_new_tokens", "K", "temperature", "top-k", "top-p", "K schedule"]


def test_the_k_schedules_the_check_accepts_are_the_ones_schedules_builds():
    assert K_SCHEDULES == SCHEDULES
