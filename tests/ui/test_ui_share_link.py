"""The page's load event and Copy link, without a server (specdec/ui/share_link.py): a link's exercise and
settings reach the page, the tour's records come back from the browser's storage, and a bad link says so."""
from types import SimpleNamespace

from specdec.ui.session import Session
from specdec.ui.share_link import LINKED, copy_link
from specdec.ui.tabs.tour.callbacks import page_load
from specdec.ui.tour_state import Prediction, TourState, to_store
from specdec.ui.url_state import LinkSchema

from tests.ui.test_ui_url_state import LIMITS

SCHEMA = LinkSchema(limits=LIMITS, examples=("Explain photosynthesis in simple terms.",))


def opened(query: dict, stored=None, state=None) -> tuple[dict, TourState]:
    state = state or TourState()
    return page_load(Session(), state, stored, SCHEMA, SimpleNamespace(query_params=query)), state


def test_a_link_loads_its_exercise_then_its_own_settings_over_it():
    update, state = opened({"exercise": "hot", "k": "7"})
    assert state.current == "hot" and update["temperature"] == 1.2 and update["k"] == 7
    assert update["tabs"]["selected"] == "generate" and update["tour_box"]["open"] is True
    assert "Settings loaded from the link" in update["link_note"]


def test_a_link_to_another_target_names_its_pair_in_the_preset_dropdown():
    update, _ = opened({"target": "lab-target"})
    assert update["target"] == "lab-target" and update["preset"] == "lab"


def test_a_bad_link_says_what_it_could_not_use_and_sets_nothing_from_it():
    update, state = opened({"k": "99", "colour": "red"})
    assert "could not all be used" in update["link_note"] and "`colour`" in update["link_note"]
    assert "k" not in update and state.current is None


def test_opening_the_page_brings_back_the_tours_records_from_the_browser():
    stored = to_store(TourState(predictions={"greedy": Prediction("70%", True)}, revealed={"greedy"}))
    update, state = opened({"exercise": "greedy"}, stored)
    assert state.predictions == {"greedy": Prediction("70%", True)} and state.done("greedy")
    assert "70%" in update["tour_compare"] and update["tour_prediction"]["value"] == "70%"


def test_the_page_load_leaves_the_address_and_the_browsers_copy_as_they_are():
    update, _ = opened({"exercise": "greedy"}, to_store(TourState()))
    assert "share_query" not in update and "tour_store" not in update


def test_a_plain_page_load_changes_no_setting_and_shows_no_note():
    update, _ = opened({})
    assert not set(update) & {"prompt", "k", "target"} and update["link_note"] == ""


def test_copy_link_carries_the_tours_exercise_and_what_differs_from_it():
    values = {"prompt": "x", "target_custom": "", "draft_custom": "", "target": "lab-target",
              "draft": "lab-draft-distilled", "k": 9, "k_schedule": "constant", "temperature": 1.2, "top_p": 1.0,
              "top_k": 0, "seed": 0, "max_new_tokens": 64, "chat": False}
    update = copy_link(TourState(current="hot"), SCHEMA, *(values[name] for name in LINKED))
    assert update["share_query"] == "exercise=hot&k=9"
    assert "Your own prompt is not put in links" in update["share_note"]
