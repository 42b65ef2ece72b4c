"""A class on one app: the app's own prompts share one measurement and one streamed run across sessions; a user's
own prompt stays private; every run reaches the class board (driven by a scripted engine, no server)."""
import threading

from specdec.serving.class_board import PRIVATE_LABEL
from specdec.ui.session import Session
from specdec.ui.tabs.board import callbacks as board_tab
from specdec.ui.tabs.generate.callbacks import Lab

import gradio as gr

from tests.ui.tabs.generate.test_ui_callbacks import ARGS
from tests.ui_fakes import FakeEngine

EXERCISE = "An exercise's prompt."


def make_lab():
    engine = FakeEngine()
    lab = Lab(engine, token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)
    lab.classroom.board.path = None
    lab.classroom.publish({EXERCISE: "Exercise 1"})
    return lab, engine


def run(lab, session=None, **changes):
    return list(lab.generate(session or Session(), **{**ARGS, "prompt": EXERCISE, **changes}))


def baselines(engine):
    return [g for g in engine.generations if g.draft is None]


def test_two_sessions_running_an_exercise_share_one_measurement():
    lab, engine = make_lab()
    first = run(lab)[-1]
    timed = len(baselines(engine))
    second = run(lab)[-1]
    assert len(baselines(engine)) == timed and first["cards"] == second["cards"]
    assert "2 runs so far got this figure" in second["status"]


def test_a_users_own_prompt_is_measured_for_that_session_only():
    lab, engine = make_lab()
    run(lab, prompt="my own prompt")
    timed = len(baselines(engine))
    final = run(lab, prompt="my own prompt")[-1]
    assert len(baselines(engine)) == 2 * timed and "for you only" in final["status"]


def test_an_app_prompt_is_recognised_whatever_its_spacing_and_a_users_own_is_not():
    lab, _ = make_lab()
    assert lab.classroom.label("  An exercise's   prompt. ") == "Exercise 1"
    assert lab.classroom.label("my own secret prompt") is None


def test_identical_requests_at_the_same_moment_watch_one_streamed_run():
    lab, engine = make_lab()
    sessions, finals = [Session() for _ in range(3)], []
    threads = [threading.Thread(target=lambda s=s: finals.append(run(lab, s)[-1])) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    streamed = [g for g in engine.generations if g.draft is not None and g.settings.max_new_tokens == 24]
    tokens = {s.last_run.result.text for s in sessions}
    assert len(finals) == 3 and len(tokens) == 1
    assert len(streamed) - len(baselines(engine)) == 1  # one streamed run; every timed pair has one of each
    assert any("for 3 identical requests" in f["status"] for f in finals)


def test_a_sampled_run_without_a_seed_is_never_shared():
    lab, engine = make_lab()
    run(lab, temperature=0.7, seed=None)
    before = len(engine.generations)
    run(lab, temperature=0.7, seed=None)
    assert len(engine.generations) == before + 1  # its own streamed run; the measurement is shared


def test_a_drafter_that_learns_across_requests_never_shares_its_streamed_run():
    lab, engine = make_lab()
    load_drafter = engine.load_drafter

    def learning(*args, **kwargs):  # like suffix: its drafts come from its own session's earlier outputs
        draft = load_drafter(*args, **kwargs)
        draft.learns_across_requests = True
        return draft
    engine.load_drafter = learning
    run(lab)
    before = len(engine.generations)
    run(lab)
    assert len(engine.generations) == before + 1  # its own streamed run; the measurement is shared


def test_a_repeated_identical_request_gets_the_run_just_made_and_says_so():
    lab, engine = make_lab()
    run(lab)
    before = len(engine.generations)
    final = run(lab)[-1]
    assert len(engine.generations) == before and "made once" in final["status"]


def test_every_finished_run_is_pooled_on_the_board_by_exercise_and_configuration():
    lab, _ = make_lab()
    run(lab)
    run(lab)
    run(lab, k=2)
    rows = lab.classroom.board.rows()
    assert [(r.label, r.runs) for r in rows] == [("Exercise 1", 2), ("Exercise 1", 1)]
    assert rows[0].speedup is not None and rows[0].acceptance_rate is not None


def test_a_private_run_reaches_the_board_as_numbers_without_its_text():
    lab, _ = make_lab()
    run(lab, prompt="my secret prompt")
    rows = lab.classroom.board.rows()
    assert [r.label for r in rows] == [PRIVATE_LABEL] and "secret" not in repr(rows)


def test_a_typed_model_name_reaches_the_board_as_own_model():
    lab, _ = make_lab()
    run(lab, draft="someone/private-finetune")
    shown = " ".join(row.config for row in lab.classroom.board.rows())
    assert "private-finetune" not in shown and "own model" in shown


def tab_opened(label: str) -> gr.SelectData:
    return gr.SelectData(None, {"value": label, "index": 0, "selected": True})


def test_opening_the_board_tab_shows_the_board_and_starts_its_refresh():
    lab, _ = make_lab()
    run(lab)
    update = board_tab.follow_tab(lab, tab_opened(board_tab.TAB_LABEL))
    assert update["board_timer"].active is True
    assert "1 run pooled" in update["board"]


def test_opening_another_tab_stops_the_boards_refresh_and_sends_no_board():
    update = board_tab.follow_tab(make_lab()[0], tab_opened("Generate"))
    assert update["board_timer"].active is False and "board" not in update
