"""What the app shows is what ran (issue "what you see is what ran"): Generate's views render from the run's record,
on the real engine and the bundled lab pair: a drafter that drafts its earlier repeats back gets no figure anywhere,
suffix decoding's figure is of the run shown, an `auto` run's export names one schedule, and an exercise's run is
filed under that exercise on the board."""
import json
from types import SimpleNamespace

import specdec
from specdec.drafters import suffix
from specdec.measure.speedup import Policy
from specdec.models import presets
from specdec.ui.exercises import EXERCISES, exercise_label
from specdec.ui.request_form import exercise_request, form_values
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab

import pytest

from tests.measure.test_measured_run import CODE, Remembering
from tests.ui_fakes import FakeEngine, form_request

FEW = Policy(min_repeats=6, floor_repeats=3, max_repeats=6, tolerance=0.0, budget_s=60, hard_budget_s=60)
LAB = dict(prompt=CODE, clean_whitespace=False, target=presets.LAB_TARGET, draft=presets.LAB_DRAFT, k=6,
           temperature=0.0, max_new_tokens=24, chat=False)


@pytest.fixture(autouse=True)
def fresh_stores(monkeypatch):
    monkeypatch.setattr(suffix, "STORES", {})
    monkeypatch.setattr(suffix, "owner_source", None)
    monkeypatch.setattr(suffix, "public_source", lambda: False)


def engine_with(drafter_for: dict):
    """The real engine, with some drafter names bound to drafters made here (a cheat for the test)."""
    def load_drafter(name, target, **kwargs):
        made = drafter_for.get(name)
        return made(target) if made else specdec.load_drafter(name, target, **kwargs)
    return SimpleNamespace(**{**{name: getattr(specdec, name) for name in specdec.__all__}, "load_drafter": load_drafter})


def run(lab, session, **changes):
    return list(lab.generate(session, form_request(**{**LAB, **changes})))[-1]


def exported(session) -> dict:
    return json.loads(open(next(p for p in session.last_run.exports if p.endswith(".json"))).read())


def test_a_cheating_drafters_speedup_is_refused_in_the_verdict_cards_export_and_board():
    lab = Lab(engine_with({"remembering": lambda target: Remembering(target.real_vocab_size)}),
              token_interval_s=0.0, settle_s=0.0, policy=FEW)
    session = Session()
    final = run(lab, session, draft="remembering")
    record = session.last_run
    assert record.estimate.fault is not None and record.result.metrics.tokens_per_forward == 1.0
    assert 'data-verdict="fault"' in final["status"] and "No speedup reported" in final["status"]
    assert "no figure" in final["cards"] and "×" not in final["cards"].split('data-metric="speedup"')[1][:200]
    assert exported(session)["speedup"]["fault"] == record.estimate.fault
    assert [row.speedup for row in lab.classroom.board.rows()] == [None]


def test_suffix_decodings_figure_is_of_the_run_shown_on_a_repeated_prompt():
    lab, session = Lab(token_interval_s=0.0, settle_s=0.0, policy=FEW), Session()
    run(lab, session, draft="suffix")
    first = session.last_run
    run(lab, session, draft="suffix")
    second = session.last_run
    assert first.learned.requests == 0 and second.learned.requests == 1
    assert second.result.metrics.tokens_per_forward > first.result.metrics.tokens_per_forward
    assert second.estimate.fault is None and second.measured.metrics.target_forwards == \
        second.result.metrics.target_forwards  # the timed repeat drafted what the run shown drafted
    assert exported(session)["learned"]["earlier_requests"] == 1


def test_an_auto_runs_export_names_the_schedule_that_ran_once():
    session = Session()
    list(Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0).generate(session, form_request(**{
        **LAB, "target": "lab-target", "draft": "auto", "k": 4})))
    text = open(next(p for p in session.last_run.exports if p.endswith(".json"))).read()
    saved = json.loads(text)
    assert saved["request"]["draft"] == "auto" and text.count('"k_schedule"') == 1


@pytest.mark.parametrize("exercise", [e for e in EXERCISES if e.evidence == "run"], ids=lambda e: e.key)
def test_an_exercises_run_is_filed_under_that_exercise_on_the_board(exercise):
    lab, session = Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0), Session()
    lab.classroom.publish({exercise.prompt: "another exercise with this prompt"})
    values = {**form_values(exercise_request(exercise)), "clean_whitespace": True}
    list(lab.generate(session, form_request(**values, exercise=exercise.key)))
    assert [row.label for row in lab.classroom.board.rows()] == [exercise_label(exercise)]


def test_a_changed_exercise_run_is_not_filed_under_the_exercise():
    exercise = EXERCISES[0]
    lab, session = Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0), Session()
    lab.classroom.publish({exercise.prompt: "Exercise 1's prompt, other settings"})
    values = {**form_values(exercise_request(exercise)), "k": exercise.k + 1}
    list(lab.generate(session, form_request(**values, exercise=exercise.key)))
    assert session.last_run.exercise is None
    assert [row.label for row in lab.classroom.board.rows()] == ["Exercise 1's prompt, other settings"]


def test_a_reload_shows_the_last_run_again_from_what_the_browser_kept():
    lab = Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0)
    before = Session()
    final = list(lab.generate(before, form_request(**LAB)))[-1]
    kept = json.loads(json.dumps(lab.keep_run(before)["run_store"]))  # what the browser's storage holds
    restored = lab.restore_run(Session(), kept)
    assert restored["tokens"] == final["tokens"] and restored["steps_table"].equals(final["steps_table"])
    assert "data-restored" in restored["status"] and "step_story" in restored and restored["plot_throughput"]


def test_a_page_that_has_a_run_or_nothing_kept_restores_nothing():
    lab, session = Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0), Session()
    assert lab.restore_run(session, None) == {} and lab.restore_run(session, {"version": 99}) == {}
    list(lab.generate(session, form_request(**LAB)))
    assert lab.restore_run(session, lab.keep_run(session)["run_store"]) == {}  # this page's own run stays
