"""Model names from the controls, loading with progress, and errors turned into messages."""
from specdec.errors import IncompatibleModelsError
from specdec.ui.models import describe_error, load_models, pick_name

import pytest


def drain(gen):
    messages = []
    while True:
        try:
            messages.append(next(gen))
        except StopIteration as stop:
            return messages, stop.value


def test_the_free_name_field_wins_over_the_dropdown():
    assert pick_name("lab-draft-small", "  ./my-draft ") == "./my-draft"
    assert pick_name("lab-draft-small", "") == "lab-draft-small"


def test_loading_relays_progress_messages_and_returns_the_models():
    def load(name, progress):
        progress(f"loading {name}")
        return name.upper()
    messages, models = drain(load_models(load, ["a", "b"]))
    assert messages == ["loading a", "loading b"] and models == ["A", "B"]


def test_a_loading_error_reaches_the_caller():
    def load(name, progress):
        raise IncompatibleModelsError("nope")
    with pytest.raises(IncompatibleModelsError):
        drain(load_models(load, ["a"]))


def test_engine_errors_are_shown_as_they_are():
    assert describe_error(IncompatibleModelsError("x cannot draft for y")) == "x cannot draft for y"


def test_torch_out_of_memory_is_recognised_by_name():
    class OutOfMemoryError(RuntimeError):
        pass
    assert describe_error(OutOfMemoryError("CUDA")).startswith("Out of memory")


def test_unexpected_errors_say_the_app_is_still_running():
    assert "still running" in describe_error(KeyError("boom"))
