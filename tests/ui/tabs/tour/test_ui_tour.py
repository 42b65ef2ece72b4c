"""The workshop tour's callbacks, without a server: each exercise loads its settings, opens its tab and asks
its question; Reveal answer quotes the learner's own figures before the explanation; the stepper moves along
the tour, keeps the learner's predictions beside what they measured, and resets to the page's defaults."""
from pathlib import Path

from specdec.engine.events import DecodeSettings
from specdec.engine.schedules import SCHEDULES
from specdec.exactness.lossless import GreedyCheck, SamplingCheck
from specdec.exactness.verifier_faults import ALWAYS_ACCEPT, REAL
from specdec.measure.sweep import SweepRunner, add_theory, plan_sweep
from specdec.models import presets
from specdec.ui.exercises import EXERCISES, find_exercise
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.lossless.callbacks import result_json
from specdec.ui.tabs.tour.callbacks import (
    TourState,
    load_exercise,
    record_check,
    record_run,
    reset,
    reveal_answer,
    save_prediction,
    step,
    step_buttons,
)
from specdec.ui.tour_state import Prediction, from_store
from specdec.ui.views.lesson import progress_html

import pytest

from tests.ui_fakes import FakeEngine, FakeModel, form_request

GREEDY, HOT, BEST_K = find_exercise("greedy"), find_exercise("hot"), find_exercise("best_k")


@pytest.fixture
def lab():
    return Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)


def run_exercise(lab, session, exercise, **changes):
    """Runs Generate with the exercise's settings (on the fake engine), as the learner would after loading it."""
    args = dict(prompt=exercise.prompt, clean_whitespace=True, target=exercise.target, draft=exercise.draft,
                target_custom="", draft_custom="", k=exercise.k, temperature=exercise.temperature,
                top_p=exercise.top_p, top_k=exercise.top_k, max_new_tokens=exercise.max_new_tokens,
                seed=exercise.seed, k_schedule=exercise.k_schedule, chat=exercise.chat)
    list(lab.generate(session, form_request(**{**args, **changes}, exercise=exercise.key)))


def test_the_tour_has_six_to_nine_exercises_with_distinct_keys():
    assert 6 <= len(EXERCISES) <= 9 and len({e.key for e in EXERCISES}) == len(EXERCISES)


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_each_exercise_button_loads_its_settings_into_the_sidebar_and_prompt(exercise):
    update = load_exercise(Session(), TourState(), exercise.key)
    expected = {"prompt": exercise.prompt, "target": exercise.target, "draft": exercise.draft, "k": exercise.k,
                "k_schedule": exercise.k_schedule, "temperature": exercise.temperature, "top_p": exercise.top_p,
                "top_k": exercise.top_k, "seed": exercise.seed, "max_new_tokens": exercise.max_new_tokens,
                "chat": exercise.chat, "target_custom": "", "draft_custom": ""}
    assert {name: update[name] for name in expected} == expected


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_each_exercise_opens_its_tab(exercise):
    assert load_exercise(Session(), TourState(), exercise.key)["tabs"]["selected"] == exercise.tab


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_each_exercise_shows_its_question_and_hides_the_previous_answer(exercise):
    update = load_exercise(Session(), TourState(), exercise.key)
    assert exercise.question in update["tour_question"] and exercise.title in update["tour_question"]
    assert update["tour_answer"] == ""


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_each_exercise_uses_models_and_a_schedule_the_app_offers(exercise):
    assert {exercise.target, exercise.draft} <= set(presets.all_model_choices())
    assert exercise.k_schedule in SCHEDULES and 1 <= exercise.k <= 16 and 0 <= exercise.temperature <= 2


def test_the_best_k_exercise_fills_the_sweeps_own_fields():
    update = load_exercise(Session(), TourState(), "best_k")
    assert update["sweep_drafts"] == list(BEST_K.sweep.drafts) and update["sweep_ks"] == BEST_K.sweep.ks
    assert update["sweep_temps"] == BEST_K.sweep.temperatures and update["sweep_tokens"] == BEST_K.sweep.tokens


def test_loading_an_exercise_makes_it_the_current_one():
    tour = TourState()
    load_exercise(Session(), tour, "code")
    assert tour.current == "code"


def test_reveal_before_choosing_an_exercise_asks_to_press_next_or_pick_one():
    answer = reveal_answer(Session(), TourState())["tour_answer"]
    assert "Press **Next** to start" in answer and "pick an exercise" in answer


def test_reveal_before_any_run_asks_to_run_first_and_still_explains():
    tour = TourState(current="greedy")
    answer = reveal_answer(Session(), tour)["tour_answer"]
    assert "You have not run anything yet" in answer and GREEDY.explanation in answer


def test_reveal_quotes_the_last_runs_acceptance_rate_and_measured_speedup(lab):
    session, tour = Session(), TourState(current="greedy")
    run_exercise(lab, session, GREEDY)
    answer = reveal_answer(session, tour)["tour_answer"]
    metrics = session.last_run.result.metrics
    assert f"acceptance rate **{metrics.acceptance_rate:.0%}** (accepted / drafted)" in answer
    assert session.last_run.estimate.describe() in answer and "not this exercise's run" not in answer


def test_the_answer_ends_with_the_exercises_explanation(lab):
    session, tour = Session(), TourState(current="greedy")
    run_exercise(lab, session, GREEDY)
    assert reveal_answer(session, tour)["tour_answer"].endswith(GREEDY.explanation)


def test_reveal_says_when_the_last_run_is_not_the_exercises_and_how_it_differs(lab):
    session, tour = Session(), TourState(current="greedy")
    run_exercise(lab, session, GREEDY, temperature=0.7, draft="lab-draft-small")
    answer = reveal_answer(session, tour)["tour_answer"]
    assert "not this exercise's run" in answer and "temperature 0.7 (exercise: 0.0)" in answer
    assert f"draft lab-draft-small (exercise: {GREEDY.draft})" in answer


def test_a_prompt_other_than_the_exercises_counts_as_another_run(lab):
    session, tour = Session(), TourState(current="greedy")
    run_exercise(lab, session, GREEDY, prompt="Something else entirely.")
    assert "another prompt" in reveal_answer(session, tour)["tour_answer"]


def test_moving_to_the_next_exercise_records_the_run_of_the_one_left(lab):
    session, tour = Session(), TourState()
    load_exercise(session, tour, "greedy")
    run_exercise(lab, session, GREEDY)
    load_exercise(session, tour, "hot")
    assert tour.observations["greedy"].acceptance_rate == session.last_run.result.metrics.acceptance_rate


def test_a_run_with_other_settings_is_not_recorded_for_the_exercise(lab):
    session, tour = Session(), TourState()
    load_exercise(session, tour, "greedy")
    run_exercise(lab, session, GREEDY, k=2)
    load_exercise(session, tour, "hot")
    assert "greedy" not in tour.observations


def test_a_later_exercise_compares_with_the_recorded_earlier_one(lab):
    session, tour = Session(), TourState()
    load_exercise(session, tour, "greedy")
    run_exercise(lab, session, GREEDY)
    greedy_rate = session.last_run.result.metrics.acceptance_rate
    load_exercise(session, tour, "hot")
    run_exercise(lab, session, HOT)
    answer = reveal_answer(session, tour)["tour_answer"]
    assert f"In exercise 1 (Greedy agreement) you measured acceptance rate **{greedy_rate:.0%}**" in answer


def test_a_comparison_without_a_recorded_run_says_how_to_get_one(lab):
    session, tour = Session(), TourState(current="hot")
    run_exercise(lab, session, HOT)
    assert "No run of exercise 1 (Greedy agreement) is recorded yet" in reveal_answer(session, tour)["tour_answer"]


def sweep_rows(draft: str):
    runner = SweepRunner(FakeEngine(), FakeModel("t"), {draft: FakeModel(draft)}, [1, 2],
                         DecodeSettings(max_new_tokens=16), {})
    return add_theory(list(runner.rows(plan_sweep([draft], [1, 2, 3], [0.0]))))


def test_the_best_k_answer_quotes_the_last_sweeps_best_measured_k():
    session, tour = Session(), TourState(current="best_k")
    session.sweep_rows = sweep_rows(BEST_K.sweep.drafts[0])
    best = next(r for r in session.sweep_rows if r.best_measured)
    answer = reveal_answer(session, tour)["tour_answer"]
    assert f"best measured K={best.k}" in answer and "not this exercise's drafts" not in answer


def test_the_best_k_answer_without_a_sweep_asks_for_one():
    assert "No sweep yet" in reveal_answer(Session(), TourState(current="best_k"))["tour_answer"]


def test_the_best_k_answer_says_when_the_sweep_used_other_drafts():
    session, tour = Session(), TourState(current="best_k")
    session.sweep_rows = sweep_rows("prompt-lookup")
    assert "not this exercise's drafts" in reveal_answer(session, tour)["tour_answer"]


def test_an_unknown_exercise_key_is_reported_not_raised():
    assert "Unknown exercise" in load_exercise(Session(), TourState(), "nope")["tour_question"]



def test_the_break_exercise_sets_the_check_to_the_real_verifier_first():
    update = load_exercise(Session(), TourState(), "break")
    assert update["lossless_verifier"] == REAL and update["tabs"]["selected"] == "lossless"


def check_result(verifier: str, p_value: float) -> dict:
    """What the Is it exact? tab shows in its JSON, for a check with this verifier and p-value."""
    greedy = GreedyCheck(["a"], ["a"], [1], [1], None, "identical", "float32")
    sampling = SamplingCheck(verifier, "", 1, 2000, 2000, 1.0, None, None, ["a"], [], 5, p_value, 0.2, 0.5, 0.01)
    return result_json(greedy, sampling)


def test_the_break_answer_quotes_each_verifiers_last_check():
    tour = TourState(current="break")
    record_check(tour, check_result(REAL, 0.42))
    record_check(tour, check_result(ALWAYS_ACCEPT, 1e-40))
    answer = reveal_answer(Session(), tour)["tour_answer"]
    assert f"{REAL}: 2,000 draws per side: Exact as far as 2,000 draws can tell: p = 0.42" in answer
    assert f"{ALWAYS_ACCEPT}: 2,000 draws per side: Not exact: p = 1e-40" in answer


def test_the_break_answer_without_a_check_asks_for_one():
    assert "No check recorded yet" in reveal_answer(Session(), TourState(current="break"))["tour_answer"]


def test_a_check_without_a_sampling_result_records_nothing():
    tour = TourState()
    record_check(tour, {"greedy": {}, "sampling": None})
    record_check(tour, None)
    assert tour.checks == {}


def test_the_teachers_guide_walks_through_every_exercise_in_order():
    guide = (Path(__file__).resolve().parents[4] / "docs" / "workshop.md").read_text(encoding="utf-8")
    places = [guide.find(f"**{n} · {e.title}**") for n, e in enumerate(EXERCISES, start=1)]
    assert -1 not in places and places == sorted(places)


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_each_exercise_names_its_pair_in_the_preset_dropdown(exercise):
    preset = load_exercise(Session(), TourState(), exercise.key)["preset"]
    assert next(p for p in presets.PAIR_PRESETS if p.key == preset).target == exercise.target


# --- the tour as a lesson: stepper, goals, predictions, records, reset -------------------------------------

def test_next_before_any_exercise_loads_the_first():
    assert "Greedy agreement" in step(Session(), TourState(), delta=1)["tour_question"]


def test_next_and_previous_move_one_exercise_along_the_tour():
    tour = TourState(current="hot")
    assert "Code vs prose" in step(Session(), tour, delta=1)["tour_question"] and tour.current == "code"
    assert "Sampling at T = 1.2" in step(Session(), tour, delta=-1)["tour_question"] and tour.current == "hot"


def test_previous_on_the_first_stays_and_next_on_the_last_says_it_was_the_last():
    first, last = TourState(current=EXERCISES[0].key), TourState(current=EXERCISES[-1].key)
    assert step(Session(), first, delta=-1) == {} and first.current == EXERCISES[0].key
    assert "last exercise" in step(Session(), last, delta=1)["tour_answer"] and last.current == EXERCISES[-1].key


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_each_question_states_its_learning_goal(exercise):
    assert f"**Goal:** {exercise.goal}" in load_exercise(Session(), TourState(), exercise.key)["tour_question"]


def test_loading_an_exercise_puts_it_in_the_pages_address():
    assert load_exercise(Session(), TourState(), "code")["share_query"] == "exercise=code"


def test_the_progress_marks_the_current_exercise_and_counts_the_answered_ones():
    tour = TourState(current="code", revealed={"greedy", "hot"})
    progress = progress_html(tour)
    assert f"Exercise 3 of {len(EXERCISES)}" in progress and f"2 of {len(EXERCISES)} answered" in progress
    assert progress.count("seg-done") == 2 and progress.count("seg-current") == 1


def test_the_current_step_stands_out_and_a_done_one_carries_a_tick():
    buttons = step_buttons(TourState(current="code", revealed={"greedy"}))
    assert buttons["tour_code"]["variant"] == "primary" and buttons["tour_hot"]["variant"] == "secondary"
    assert buttons["tour_greedy"]["value"] == "✓ 1 · Greedy agreement"


def test_revealing_an_answer_marks_the_exercise_done():
    tour = TourState(current="greedy")
    reveal_answer(Session(), tour)
    assert tour.done("greedy")


def test_a_prediction_written_before_the_run_is_shown_beside_the_measurement(lab):
    session, tour = Session(), TourState()
    load_exercise(session, tour, "greedy")
    save_prediction(session, tour, "about 70%")
    run_exercise(lab, session, GREEDY)
    compare = record_run(session, tour)["tour_compare"]
    rate = session.last_run.result.metrics.acceptance_rate
    assert tour.predictions["greedy"] == Prediction("about 70%", before_run=True)
    assert "about 70%" in compare and "written before the run" in compare
    assert f"acceptance rate <b>{rate:.0%}</b>" in compare


def test_a_prediction_written_after_a_recorded_run_says_so(lab):
    session, tour = Session(), TourState()
    load_exercise(session, tour, "greedy")
    run_exercise(lab, session, GREEDY)
    record_run(session, tour)
    assert "written after a run" in save_prediction(session, tour, "70%")["tour_compare"]


def test_an_empty_prediction_box_keeps_the_saved_prediction():
    tour = TourState(current="greedy", predictions={"greedy": Prediction("70%", True)})
    assert save_prediction(Session(), tour, "  ") == {} and tour.predictions["greedy"].text == "70%"


def test_a_run_with_other_settings_is_not_recorded_when_it_ends(lab):
    session, tour = Session(), TourState(current="greedy")
    run_exercise(lab, session, GREEDY, k=2)
    assert record_run(session, tour) == {} and tour.observations == {}


def test_every_change_to_the_records_goes_to_the_browsers_copy(lab):
    session, tour = Session(), TourState(current="greedy")
    run_exercise(lab, session, GREEDY)
    stored = record_run(session, tour)["tour_store"]
    assert from_store(stored).observations == tour.observations


def test_reset_puts_the_pages_defaults_back_and_clears_the_tour():
    defaults = {"k": 1, "temperature": 0.0, "prompt": "first example"}
    tour = TourState(current="hot", predictions={"hot": Prediction("x", True)}, revealed={"greedy"})
    update = reset(Session(), tour, defaults)
    assert {name: update[name] for name in defaults} == defaults
    assert update["tour_state"] == TourState() and from_store(update["tour_store"]) == TourState()
    assert update["share_query"] == "" and update["tabs"]["selected"] == "generate"


def test_saving_the_same_prediction_again_keeps_when_it_was_written(lab):
    session, tour = Session(), TourState(current="greedy")
    save_prediction(session, tour, "70%")
    run_exercise(lab, session, GREEDY)
    record_run(session, tour)
    save_prediction(session, tour, "70%")
    assert tour.predictions["greedy"].before_run


def test_the_tours_events_take_effect_one_at_a_time_in_the_order_pressed():
    from specdec.ui.layout import build_app

    app = build_app(Lab(FakeEngine()))
    tour_ids = {block_id for block_id, block in app.blocks.items()
                if str(getattr(block, "elem_id", "") or "").startswith("tour-")}
    tour_fns = [fn for fn in app.fns.values() if any(target in tour_ids for target, _ in fn.targets)]
    assert len(tour_fns) >= len(EXERCISES) + 4  # the step buttons, Previous, Next, Reset, Reveal, the prediction
    assert {(fn.concurrency_id, fn.concurrency_limit) for fn in tour_fns} == {("tour", 1)}


def test_the_handout_follows_the_learners_predictions_and_runs(lab):
    session, tour = Session(), TourState()
    load_exercise(session, tour, "greedy")
    save_prediction(session, tour, "most of them")
    run_exercise(lab, session, find_exercise("greedy"))
    view = record_run(session, tour)
    page = open(view["tour_handout"], encoding="utf-8").read()
    item = page.split('data-exercise="greedy"')[1].split("</li>")[0]
    assert "most of them" in item and "tokens per target forward" in item
