"""The tour's records in the browser's storage (specdec/ui/tour_state.py): what is kept across a reload,
and how anything unreadable is left out instead of raising."""
from specdec.ui.tour_state import STORE_VERSION, Observation, Prediction, TourState, from_store, to_store

import pytest

OBS = Observation(0.65, 0.85, 3.37, "1.42×, 95% interval 1.37–1.48, 9 repeats", "faster")


def recorded() -> TourState:
    return TourState(current="hot", observations={"greedy": OBS}, checks={"real": "2,000 draws per side: exact"},
                     predictions={"greedy": Prediction("about 70%", before_run=True)}, revealed={"greedy"})


def test_the_records_read_back_from_the_browsers_copy():
    back = from_store(to_store(recorded()))
    want = recorded()
    assert (back.observations, back.predictions, back.checks, back.revealed) == (
        want.observations, want.predictions, want.checks, want.revealed)


def test_the_current_exercise_is_not_stored_as_it_travels_in_the_link():
    assert from_store(to_store(recorded())).current is None


@pytest.mark.parametrize("stored", [None, "text", [], {}, {"version": STORE_VERSION + 1, "revealed": ["greedy"]}])
def test_an_unreadable_store_gives_an_empty_tour(stored):
    assert from_store(stored) == TourState()


def test_malformed_or_unknown_entries_are_left_out_and_the_rest_kept():
    stored = to_store(recorded())
    stored["observations"]["nope"] = stored["observations"]["greedy"]
    stored["observations"]["hot"] = {**stored["observations"]["greedy"], "alpha": "high"}
    stored["predictions"]["code"] = {"text": 3, "before_run": True}
    stored["predictions"]["open"] = {"text": "x"}
    stored["revealed"] += ["nope", 5]
    back = from_store(stored)
    assert set(back.observations) == {"greedy"} and set(back.predictions) == {"greedy"}
    assert back.revealed == {"greedy"}


def test_an_exercise_is_done_once_its_answer_was_revealed():
    assert recorded().done("greedy") and not recorded().done("hot")
