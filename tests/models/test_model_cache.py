"""The loaded-model cache: bounded in bytes with least-recently-used release, one load per model
under concurrency, and loads or runs that would not fit refused before they start."""
import threading

from specdec import ModelLoadError, load_model
from specdec.errors import InvalidSettingsError
from specdec.models import loading, memory
from specdec.models.cache import ModelCache

import pytest

from tests.tiny_models import build_model, save, tiny_config

MB = 1_000_000


def fill(cache: ModelCache, key: str, size: int = 40 * MB):
    return cache.get_or_load(key, lambda: f"model {key}", size=lambda model: size, estimate=size)


def test_a_second_get_returns_the_cached_model_without_loading():
    cache = ModelCache(budget=100 * MB)
    assert fill(cache, "a") is fill(cache, "a") and cache.loads == 1


def test_least_recently_used_models_are_released_to_stay_within_the_budget():
    released = []
    cache = ModelCache(budget=100 * MB, release=released.append)
    fill(cache, "a"), fill(cache, "b")
    fill(cache, "c")
    assert released == ["model a"] and cache.keys() == ["b", "c"] and cache.used == 80 * MB


def test_using_a_model_makes_it_the_last_to_be_released():
    released = []
    cache = ModelCache(budget=100 * MB, release=released.append)
    fill(cache, "a"), fill(cache, "b")
    fill(cache, "a")
    fill(cache, "c")
    assert released == ["model b"] and cache.keys() == ["a", "c"]


def test_the_model_just_loaded_is_kept_even_when_larger_than_the_estimate():
    cache = ModelCache(budget=100 * MB)
    fill(cache, "a")
    cache.get_or_load("big", lambda: "model big", size=lambda model: 150 * MB, estimate=None)
    assert cache.keys() == ["big"]


def test_concurrent_loads_of_the_same_model_happen_once():
    cache, started, release = ModelCache(), threading.Event(), threading.Event()

    def slow_load():
        started.set()
        release.wait(5)
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_load("m", slow_load, size=lambda m: 1)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    started.wait(5)
    release.set()
    for thread in threads:
        thread.join(5)
    assert cache.loads == 1 and len(results) == 8 and all(r is results[0] for r in results)


def test_a_failed_load_reaches_every_waiter_and_is_not_cached():
    cache, calls = ModelCache(), []

    def failing():
        calls.append(1)
        raise ModelLoadError("damaged")

    for _ in range(2):
        with pytest.raises(ModelLoadError, match="damaged"):
            cache.get_or_load("m", failing, size=lambda m: 1)
    assert len(calls) == 2 and "m" not in cache


def test_a_load_the_admission_check_refuses_never_starts():
    cache, loaded = ModelCache(budget=10 * MB), []

    def refuse(budget):
        raise ModelLoadError(f"over {budget}")

    with pytest.raises(ModelLoadError, match="over 10000000"):
        cache.get_or_load("m", lambda: loaded.append(1), size=lambda m: 1, estimate=50 * MB, admit=refuse)
    assert not loaded and cache.keys() == []


def test_a_model_larger_than_the_budget_is_refused_with_a_message():
    with pytest.raises(ModelLoadError, match=r"needs about 50.0 MB for its weights, more than this deployment's "
                                             r"model memory of 10.0 MB"):
        memory.check_load_fits("big-model", 50 * MB, loading.resolve_device("cpu"), 10 * MB)


def test_a_model_larger_than_the_free_memory_is_refused_with_a_message(monkeypatch):
    monkeypatch.setattr(memory, "free_bytes", lambda device: 20 * MB)
    with pytest.raises(ModelLoadError, match="needs about 50.0 MB for its weights, but only 20.0 MB is free on cpu"):
        memory.check_load_fits("big-model", 50 * MB, loading.resolve_device("cpu"), None)


@pytest.fixture
def folder(tmp_path):
    return save(build_model(tiny_config("llama"), seed=0), tmp_path / "model")


@pytest.fixture
def small_budget():
    loading.set_cache_budget(1e-6)  # 1 kB: smaller than any model
    yield
    loading.set_cache_budget(None)


def test_load_model_refuses_a_model_over_the_configured_budget_before_loading(folder, small_budget, monkeypatch):
    monkeypatch.setattr(loading, "_load_uncached", lambda *args: pytest.fail("loading started"))
    with pytest.raises(ModelLoadError, match="more than this deployment's model memory of 0.0 MB"):
        load_model(folder)


def test_load_model_estimates_a_folder_from_its_safetensors_headers(folder):
    params = sum(p.numel() for p in build_model(tiny_config("llama"), seed=0).parameters())
    assert loading.folder_weight_bytes(folder, loading.DTYPES["float32"]) == 4 * params


def test_a_damaged_header_is_never_read_as_a_length(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes((10**15).to_bytes(8, "little") + b"{}")
    assert loading.folder_weight_bytes(str(tmp_path), loading.DTYPES["float32"]) is None


def test_a_run_that_would_not_fit_is_refused_before_its_cache_is_allocated(folder, monkeypatch):
    model = load_model(folder)
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1000)
    with pytest.raises(InvalidSettingsError, match="A run of 200 positions needs about .* of KV cache"):
        model.new_runner(model.real_vocab_size, 200)


def test_on_cuda_memory_torch_holds_unused_counts_as_free(monkeypatch):
    monkeypatch.setattr(memory.torch.cuda, "mem_get_info", lambda device: (100 * MB, 1000 * MB))
    monkeypatch.setattr(memory.torch.cuda, "memory_reserved", lambda device: 300 * MB)
    monkeypatch.setattr(memory.torch.cuda, "memory_allocated", lambda device: 120 * MB)
    assert memory.free_bytes(memory.torch.device("cuda")) == 280 * MB


def test_a_cpus_free_memory_is_read_again_only_after_it_is_stale(monkeypatch):
    reads = []
    monkeypatch.setattr(memory, "_cpu_free_bytes", lambda: reads.append(1) or 5 * MB)
    monkeypatch.setattr(memory, "_CPU_FREE", [float("-inf"), None])
    cpu = memory.torch.device("cpu")
    assert [memory.free_bytes(cpu) for _ in range(3)] == [5 * MB] * 3 and len(reads) == 1
    memory._CPU_FREE[0] -= memory.CPU_FREE_FRESH_S * 2  # the reading grows stale
    memory.free_bytes(cpu)
    assert len(reads) == 2


def test_a_load_reads_the_cpus_free_memory_afresh(monkeypatch):
    readings = iter([5 * MB, 1 * MB])
    monkeypatch.setattr(memory, "_cpu_free_bytes", lambda: next(readings))
    monkeypatch.setattr(memory, "_CPU_FREE", [float("-inf"), None])
    cpu = memory.torch.device("cpu")
    assert memory.free_bytes(cpu) == 5 * MB  # then a load takes memory: the next load must see what is left
    with pytest.raises(ModelLoadError, match="only 1.0 MB is free"):
        memory.check_load_fits("the draft", 2 * MB, cpu, None)
