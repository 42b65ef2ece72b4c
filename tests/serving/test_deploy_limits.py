"""Deployment limits: public defaults, environment and flags, the checks the app applies before a run,
the per-run time budget, hardened inputs, and old export files cleaned away."""
import os
import re
import time

from specdec.errors import InvalidSettingsError
from specdec.serving.limits import LOCAL, PUBLIC, check_prompt_text, limits_from_env
from specdec.ui.deploy import remove_old_exports
from specdec.ui.guard import check_request, harden, within_budget
from specdec.ui.launch import parse_options
from specdec.ui.session import Session

import gradio as gr
import pytest


def test_a_space_gets_the_public_limits_and_no_local_paths():
    options = parse_options([], env={"SPACE_ID": "user/specdec-lab"})
    assert options.limits == PUBLIC and not options.allow_local_paths
    assert PUBLIC.queue_size and PUBLIC.run_budget_s and PUBLIC.max_new_tokens <= LOCAL.max_new_tokens


def test_a_local_run_keeps_the_local_limits_and_local_paths():
    options = parse_options([], env={})
    assert options.limits == LOCAL and options.allow_local_paths


def test_public_flag_selects_the_public_limits_anywhere():
    assert parse_options(["--public"], env={}).limits == PUBLIC


def test_environment_variables_override_the_profile_and_flags_override_them():
    env = {"SPACE_ID": "x", "SPECDEC_MAX_NEW_TOKENS": "100", "SPECDEC_RUN_BUDGET_S": "off"}
    limits = parse_options(["--queue-size", "5"], env=env).limits
    assert (limits.max_new_tokens, limits.run_budget_s, limits.queue_size) == (100, None, 5)


@pytest.mark.parametrize("variable, value", [("SPECDEC_QUEUE_SIZE", "many"), ("SPECDEC_MAX_NEW_TOKENS", "0"),
                                             ("SPECDEC_RUN_BUDGET_S", "nan"), ("SPECDEC_MAX_REPEATS", "2")])
def test_a_bad_limit_in_the_environment_is_refused_by_name(variable, value):
    with pytest.raises(InvalidSettingsError, match=variable):
        limits_from_env({variable: value})


def test_a_bad_limit_flag_exits_with_a_usage_line(capsys):
    with pytest.raises(SystemExit) as stop:
        parse_options(["--max-sweep-points", "-3"], env={})
    assert stop.value.code == 2 and "--max-sweep-points must be a finite number of at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("variable, value", [("SPECDEC_SHARE", "maybe"), ("SPECDEC_PORT", "http"),
                                             ("SPECDEC_ALLOW_LOCAL_PATHS", "sometimes"), ("SPECDEC_PUBLIC", "2")])
def test_a_bad_app_variable_exits_with_a_usage_line_naming_it(capsys, variable, value):
    with pytest.raises(SystemExit) as stop:
        parse_options([], env={variable: value})
    assert stop.value.code == 2 and f"app.py: error: {variable} must be " in capsys.readouterr().err


@pytest.mark.parametrize("text", ["🦀", "مرحبا", "a\x00\x1b[0m\u202e", ""])
def test_valid_unicode_passes_the_prompt_check_unchanged(text):
    assert check_prompt_text(text, 100) == text


REQUEST = dict(prompt="def f():", target="lab-target", draft="lab-draft-distilled", target_custom="", draft_custom="",
               k=4, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=64, seed=0)


@pytest.mark.parametrize("changes, message", [
    ({"max_new_tokens": 300}, "Max new tokens must be from 1 to 256 (got 300)"),
    ({"prompt": "x" * 9000}, "at most 8,000"),
    ({"prompt": "\ud83e"}, "unpaired surrogate (U+D83E at character 1)"),
    ({"temperature": float("nan")}, "temperature must be a finite number"),
    ({"target_custom": 7}, "Model name (target) must be text (got int)"),
    ({"ks": "1-16", "temperatures": "0, 1", "drafts": ["a", "b"]}, "This sweep has 64 points"),
    ({"ks": "5-1", "temperatures": "0", "drafts": ["a"]}, "a range goes low to high"),
    ({"ks": "1-8", "temperatures": "0, 1", "drafts": ["a"], "schedules": ["constant", "heuristic", "confidence", "optimal"]},
     "This sweep has 64 points (1 draft(s) x 8 K value(s) x 2 temperature(s) x 4 K schedule(s))"),
], ids=["max-new-tokens", "prompt-size", "surrogate", "nan", "name-type", "sweep-size", "reversed-range",
        "schedules-count"])
def test_a_request_beyond_the_public_limits_is_refused_before_it_runs(changes, message):
    with pytest.raises((InvalidSettingsError, ValueError), match=re.escape(message)):
        check_request({**REQUEST, **changes}, PUBLIC)


def test_a_request_within_the_limits_passes():
    check_request({**REQUEST, "ks": "1-8", "temperatures": "0, 0.7, 1.0", "drafts": ["lab-draft-distilled"]}, PUBLIC)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def updates_until_stopped(session, clock, step_s):
    """A callback that runs until Stop, as Generate does: one update per step, then a final one."""
    while not session.stop_requested:
        clock.now += step_s
        yield {"tokens": f"t={clock.now:g}"}
    yield {"tokens": "final", "status": "<p>Stopped.</p>"}


def test_a_run_past_its_time_budget_is_stopped_and_says_why():
    session, clock = Session(), Clock()
    out = list(within_budget(updates_until_stopped(session, clock, 1.0), session, 5.0, clock))
    assert session.stop_requested and out[-1]["tokens"] == "final"
    assert "Stopped after 5 s, this deployment" in out[-1]["status"] and "Stopped." in out[-1]["status"]
    assert [u["tokens"] for u in out[:-1]] == [f"t={t}" for t in range(1, 6)]  # nothing lost on the way


def test_a_run_within_its_budget_is_passed_through_unchanged():
    session, clock = Session(), Clock()
    updates = [{"tokens": "a"}, {"tokens": "b", "status": "done"}]
    assert list(within_budget(iter(updates), session, 5.0, clock)) == updates and not session.stop_requested


@pytest.mark.parametrize("payload, message", [
    (float("nan"), "K: expected a finite number, got nan."),
    ("4", "K: expected a finite number, got '4'."),
    (100, "K must be from 1 to 16 (got 100)."),
    (0, "K must be from 1 to 16 (got 0)."),
])
def test_a_hardened_slider_refuses_quietly_with_its_label(payload, message):
    with gr.Blocks():
        slider = harden(gr.Slider(1, 16, step=1, label="K"))
    with pytest.raises(gr.Error, match=re.escape(message)) as refused:
        slider.preprocess(payload)
    assert refused.value.print_exception is False


def test_a_fresh_copy_of_a_hardened_component_refuses_quietly_too():
    """Gradio makes a session's updated component anew from block.__class__: the copy is hardened as well."""
    with gr.Blocks():
        slider = harden(gr.Slider(1, 16, step=1, label="K"))
        copy = slider.__class__(minimum=1, maximum=16, step=1, label="K")
    with pytest.raises(gr.Error, match=re.escape("K must be from 1 to 16 (got 0).")) as refused:
        copy.preprocess(0)
    assert refused.value.print_exception is False and isinstance(copy, gr.Slider)


def test_old_export_folders_are_removed_and_everything_else_is_kept(tmp_path):
    old, fresh, foreign = tmp_path / "specdec-old", tmp_path / "specdec-new", tmp_path / "specdec-family-build"
    for folder, name in ((old, "specdec-trace.json"), (fresh, "specdec-trace.json"), (foreign, "weights.bin")):
        folder.mkdir()
        (folder / name).write_text("x")
    hour_ago = time.time() - 7200
    for folder in (old, foreign):
        os.utime(folder, (hour_ago, hour_ago))
    assert remove_old_exports(tmp_path, max_age_s=3600) == 1
    assert not old.exists() and fresh.exists() and foreign.exists()
