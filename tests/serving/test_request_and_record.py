"""The request (what was asked) and the run record (what ran, made by the run): specdec/serving/request.py and
run_record.py."""
import json

from specdec import DecodeSettings, generate, load_model
from specdec.measure.speedup import INTERACTIVE, estimate, Pair, Timing
from specdec.planning.run import load_drafter
from specdec.serving.request import RunRequest, decode_settings
from specdec.serving.run_record import RunRecord

import pytest


@pytest.fixture(scope="module")
def lab():
    return load_model("lab-target"), load_model("lab-draft-distilled")


def request(**changes) -> RunRequest:
    values = dict(prompt="def f(x):", target="lab-target", draft="lab-draft-distilled",
                  settings=decode_settings(4, 0.0, 1.0, 0, 16, 0), chat=False)
    return RunRequest(**{**values, **changes})


def test_widget_values_switch_warpers_off_at_top_p_1_and_top_k_0():
    settings = decode_settings(3, 0.7, 1.0, 0, 32, "")
    assert (settings.top_p, settings.top_k, settings.seed, settings.k_schedule) == (None, None, None, "constant")


def test_a_requests_field_values_read_back_into_the_same_request():
    asked = request(settings=decode_settings(5, 0.8, 0.9, 40, 64, 7, "heuristic"))
    values = asked.field_values()
    settings = decode_settings(values["k"], values["temperature"], values["top_p"], values["top_k"],
                               values["max_new_tokens"], values["seed"], values["k_schedule"])
    assert settings == asked.settings and values["draft"] == asked.draft


def test_an_export_of_the_request_never_holds_the_prompt_text():
    assert "prompt" not in request(prompt="my secret text").to_dict()


def test_the_record_says_what_ran_not_what_was_asked_for_auto(lab):
    target, _ = lab
    asked = request(draft="auto", settings=decode_settings(4, 0.0, 1.0, 0, 16, 0))
    result = generate(target, load_drafter("auto", target), target.encode(asked.prompt), asked.settings)
    record = RunRecord(asked, asked.prompt, result)
    exported = record.to_dict()
    assert exported["settings"]["k_schedule"] == "auto" and exported["request"]["draft"] == "auto"
    assert json.dumps(exported).count('"k_schedule"') == 1  # said once, in the settings that ran
    assert record.drafted_by == result.auto["drafter"] or result.auto["drafter"] is None
    assert record.ks == [event.k for event in result.events] and record.k_schedule == "auto"


def test_the_record_names_the_drafters_family(lab):
    target, draft = lab
    asked = request()
    result = generate(target, draft, target.encode(asked.prompt), asked.settings)
    record = RunRecord(asked, asked.prompt, result)
    assert record.family == "draft model" and record.ran_words().startswith("Ran lab-target with lab-draft-distilled")


def test_a_fault_is_not_a_measured_figure(lab):
    target, draft = lab
    asked = request()
    result = generate(target, draft, target.encode(asked.prompt), asked.settings)
    record = RunRecord(asked, asked.prompt, result, estimate=estimate([Pair(Timing(8, 1.0), Timing(8, 1.0), True)],
                                                                     state="fault", fault="a made-up fault"),
                       policy=INTERACTIVE)
    assert not record.measured_ok and record.to_dict()["speedup"]["fault"] == "a made-up fault"


def test_the_exercise_that_started_a_run_is_in_its_record(lab):
    target, draft = lab
    asked = request(exercise="greedy")
    result = generate(target, draft, target.encode(asked.prompt), asked.settings)
    assert RunRecord(asked, asked.prompt, result).exercise == "greedy"


def test_a_record_kept_in_the_browser_comes_back_with_every_view_it_had(lab):
    target, draft = lab
    asked = request(exercise="greedy")
    result = generate(target, draft, target.encode(asked.prompt), asked.settings)
    est = estimate([Pair(Timing(16, 1.0), Timing(16, 1.3), True)] * 6, state="done")
    record = RunRecord(asked, asked.prompt, result, estimate=est, baseline=result, measured=result)
    back = RunRecord.from_store(json.loads(json.dumps(record.to_store())))
    assert back.to_dict() == record.to_dict() and back.request == asked and back.at == record.at


@pytest.mark.parametrize("kept", [None, {}, {"version": 0}, {"version": 1, "request": {}}, "text", [1, 2]])
def test_anything_else_in_the_browsers_storage_is_not_a_record(kept):
    assert RunRecord.from_store(kept) is None
