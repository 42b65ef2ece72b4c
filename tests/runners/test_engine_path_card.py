"""The engine card: the path the measured `auto` chose for the target and the figures behind it."""
from specdec.runners import tuning
from specdec.runners.tuning import CandidateFigures, TunedPath
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.views.cards import _engine_card

import pytest

from tests.ui.tabs.generate.test_ui_callbacks import ARGS
from tests.ui_fakes import form_request
from tests.ui_fakes import FakeEngine


def measured_path() -> TunedPath:
    return TunedPath({}, "float32", 1, "fastest", [
        CandidateFigures("float32", 1, "static, float16 weight copies", 16.5, 54.0, True),
        CandidateFigures("bfloat16", 1, "static, oneDNN-packed bfloat16 weights", 45.9, 65.7, True,
                         excluded="its batched rows differ from one-token rows")])


def test_the_card_names_the_chosen_path_its_figures_and_the_excluded_ones():
    card = _engine_card(measured_path())
    assert 'data-metric="engine"' in card and "float32 · 1 thread" in card
    assert "step 16.5 ms, verify 54.0 ms" in card and "bfloat16, 1 thread 111.6 ms (excluded: its batched rows" in card


def test_the_card_names_the_thread_count_per_row_bucket():
    path = measured_path()
    path.threads_by_rows = {"1": 1, "2-5": 2, "6-17": 2}
    assert "1 new token: 1 thread, 2-5 new tokens: 2 threads, 6-17 new tokens: 2 threads" in _engine_card(path)


@pytest.fixture
def remembered(monkeypatch):
    monkeypatch.setattr(tuning, "_CHOSEN", {})


def final_cards(lab) -> str:
    return [u["cards"] for u in lab.generate(Session(), form_request(**ARGS)) if "cards" in u][-1]


def test_a_run_on_a_measured_target_shows_the_engine_card(remembered):
    tuning.remember(ARGS["target"], measured_path())
    lab = Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)
    assert 'data-metric="engine"' in final_cards(lab)


def test_a_target_loaded_without_measuring_shows_no_engine_card(remembered):
    lab = Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)
    assert 'data-metric="engine"' not in final_cards(lab)
