"""The measured `auto` (specdec/runners/tuning.py): the fastest path that keeps greedy identity is chosen, cached by key in
the model cache folder, and explicit choices win."""
from dataclasses import replace

from specdec import load_model
from specdec.cli.tune import format_path
from specdec.runners import machine_records, threads, tuning
from specdec.runners.tuning import CandidateFigures, TunedPath, choose

import pytest
import torch

from tests.tiny_models import build_model, save, tiny_config

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECDEC_RECORDS", raising=False)  # the records in this cache
    monkeypatch.delenv("SPECDEC_STEP_THREADS", raising=False)
    monkeypatch.delenv("SPECDEC_TUNING", raising=False)


@pytest.fixture
def tiny_folder(tmp_path):
    return save(build_model(tiny_config("llama"), seed=0), tmp_path / "model")


def figures(dtype, count, step, verify, excluded=""):
    return CandidateFigures(dtype, count, "static", step, verify, identical=not excluded, excluded=excluded)


def record(key=None):
    key = key or {"model": "m", "device": "cpu", "cpu": "c", "torch": torch.__version__, "omp_wait_policy": "PASSIVE",
                  "cores": 2, "lab_kernels": True}
    return TunedPath(key, "float32", 1, "fastest", [figures("float32", 1, 10.0, 12.0)], [], 0.5, "now")


def test_the_fastest_allowed_candidate_is_chosen():
    best, why = choose([figures("float32", 1, 20, 25), figures("float32", 2, 15, 20), figures("bfloat16", 2, 18, 19)])
    assert (best.dtype, best.threads) == ("float32", 2) and "next: bfloat16, 2 threads" in why


def test_a_candidate_that_breaks_identity_is_never_chosen_however_fast():
    broken = figures("bfloat16", 1, 1, 1, excluded="its greedy tokens differ from float32's")
    best, _ = choose([figures("float32", 1, 20, 25), broken])
    assert best.dtype == "float32"


def test_without_an_allowed_candidate_the_float32_reference_is_kept_and_says_why():
    best, why = choose([figures("float32", 1, 20, 25, excluded="x"), figures("float32", 2, 10, 10, excluded="y")])
    assert (best.dtype, best.threads) == ("float32", 1) and "no candidate kept greedy identity" in why


@pytest.mark.parametrize("tokens, reference, rows_exact, dtype, expected", [
    ([1, 2], [1, 2], False, "float32", ""),
    ([1, 3], [1, 2], False, "float32", "differ from float32's"),
    ([1, 2], [1, 2], False, "bfloat16", "not row-exact"),
    ([1, 2], [1, 2], True, "bfloat16", ""),
    ([1, 3], [1, 2], True, "q4_1", ""),  # a GGUF's blocks compute with the file's own numbers, not float32's
    ([1, 2], [1, 2], False, "q4_1", "not row-exact"),
])
def test_exclusion_names_the_identity_it_would_break(tokens, reference, rows_exact, dtype, expected):
    candidate = CandidateFigures(dtype, 1, identical=True, rows_exact=rows_exact)
    reason = tuning.exclusion(candidate, tokens, reference)
    assert (expected in reason) if expected else reason == ""


def test_batched_tokens_that_differ_from_one_token_steps_exclude_a_candidate():
    assert "batched verification" in tuning.exclusion(CandidateFigures("float32", 1, identical=False), [1], [1])


def test_a_record_survives_the_cache_file_round_trip():
    stored = record()
    tuning.store(stored)
    assert tuning.cached_path(stored.key) == stored
    assert tuning.cache_file().name == "tuning.json"


def test_a_records_folder_keeps_the_records_out_of_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDEC_RECORDS", str(tmp_path / "records"))
    tuning.store(record())
    assert (tmp_path / "records" / "tuning.json").is_file() and not (tmp_path / "cache" / "tuning.json").exists()


@pytest.mark.parametrize("field, value", [("torch", "0.0.0"), ("cpu", "another CPU"), ("model", "other shape"),
                                          ("omp_wait_policy", "ACTIVE"), ("cores", 64),
                                          ("lab_kernels", False), ("lab_kernels", "another build")])
def test_a_changed_key_is_measured_again(field, value):
    stored = record()
    tuning.store(stored)
    assert tuning.cached_path({**stored.key, field: value}) is None


def test_an_unreadable_cache_file_is_measured_again():
    tuning.cache_file().parent.mkdir(parents=True)
    tuning.cache_file().write_text("{not json")
    assert tuning.cached_path(record().key) is None


def test_an_explicit_thread_count_is_the_only_one_measured(monkeypatch):
    monkeypatch.setenv("SPECDEC_STEP_THREADS", "1")
    assert tuning.thread_candidates() == [1]


def test_an_explicit_dtype_is_loaded_as_asked_without_measuring(monkeypatch, tiny_folder):
    monkeypatch.setattr(tuning, "measure_paths", lambda *a, **k: pytest.fail("measured for an explicit dtype"))
    loaded = load_model(tiny_folder, dtype="float32")
    assert loaded.dtype == torch.float32 and not tuning.cache_file().exists()


def test_auto_measures_once_then_reuses_the_cached_choice(monkeypatch, tiny_folder):
    first = load_model(tiny_folder)
    assert first.tuned is not None and tuning.cached_path(first.tuned.key) == first.tuned
    monkeypatch.setattr(tuning, "measure_paths", lambda *a, **k: pytest.fail("measured again"))
    assert tuning.tuned_path(tiny_folder, CPU, lambda: first).dtype == first.tuned.dtype


def test_the_chosen_thread_counts_run_the_models_forwards(tiny_folder):
    """A one-token forward on the measured count; three rows on the count measured for their bucket (2-5), where
    one was measured (the two may differ: each is the fastest measured on this machine at load)."""
    loaded = load_model(tiny_folder)
    assert threads.model_threads(loaded.model) == loaded.tuned.threads
    seen = []
    runner = loaded.new_runner(loaded.embedding_rows, 16)
    call = runner._call
    runner._call = lambda ids, last_only: seen.append(torch.get_num_threads()) or call(ids, last_only)
    runner.prefill([1, 2, 3])
    runner.forward([4])
    by_rows = loaded.tuned.threads_by_rows
    assert seen == [by_rows.get("2-5", loaded.tuned.threads), by_rows.get("1", loaded.tuned.threads)]


def test_an_explicit_thread_count_wins_over_the_measured_one(monkeypatch, tiny_folder):
    loaded = load_model(tiny_folder)
    threads.set_model_threads(loaded.model, 2)
    monkeypatch.setenv("SPECDEC_STEP_THREADS", "1")
    assert threads.model_threads(loaded.model) == 1


def test_the_lab_model_measurement_produces_a_full_record():
    path = load_model("lab-target").tuned
    assert [c.threads for c in path.candidates if (c.dtype, c.kernels) == ("float32", "torch")] == tuning.thread_candidates()
    assert all(c.step_ms > 0 and c.verify_ms > 0 and c.runner for c in path.candidates)
    assert path.chosen is not None and not path.chosen.excluded
    assert path.key["cpu"] == machine_records.cpu_model() and path.key["torch"] == torch.__version__
    table = format_path(path)
    assert "chosen:" in table and len(table.splitlines()) >= 5 + len(path.candidates) - 1


def test_tuning_off_follows_the_rules(monkeypatch, tiny_folder):
    monkeypatch.setenv("SPECDEC_TUNING", "0")
    loaded = load_model(tiny_folder)
    assert loaded.dtype == torch.float32 and not tuning.cache_file().exists()


def test_tune_shows_the_cached_choice_and_refresh_measures_again(monkeypatch, capsys):
    from specdec.cli.main import main

    assert main(["tune", "--target", "lab-target"]) == 0
    shown = capsys.readouterr().out
    assert "chosen: float32" in shown and str(tuning.cache_file()) in shown
    calls = []
    measure = tuning.measure_paths
    monkeypatch.setattr(tuning, "measure_paths", lambda *a, **k: calls.append(1) or measure(*a, **k))
    assert main(["tune", "--target", "lab-target"]) == 0 and calls == []
    assert main(["tune", "--target", "lab-target", "--refresh"]) == 0 and calls == [1]


def test_tune_off_the_cpu_is_one_line_and_exit_2(capsys):
    from specdec.cli.main import main

    assert main(["tune", "--target", "lab-target", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_an_auto_load_is_remembered_for_the_engine_card(tiny_folder):
    loaded = load_model(tiny_folder)
    assert tuning.chosen_for(tiny_folder) is loaded.tuned


def test_the_cost_models_auto_dtype_is_the_measured_one(monkeypatch, tiny_folder):
    from specdec.measure.cost_model import choose_dtype
    from specdec.measure.device_presets import THIS_MACHINE, preset

    loaded = load_model(tiny_folder)
    monkeypatch.setattr(tuning, "cached_path", lambda key: replace(loaded.tuned, dtype="bfloat16"))
    assert choose_dtype("auto", replace(preset("t4"), key=THIS_MACHINE), tiny_folder) == "bfloat16"


def timed(kernels, count, step, verify, wide):
    return replace(figures("float32", count, step, verify), kernels=kernels, wide_ms=wide)


def test_each_row_bucket_gets_the_thread_count_fastest_for_it():
    one, two = timed("lab", 1, 10.0, 20.0, 30.0), timed("lab", 2, 12.0, 14.0, 18.0)
    assert tuning.threads_by_rows(one, [one, two, timed("torch", 2, 1.0, 1.0, 1.0)]) == {"1": 1, "2-5": 2, "6-17": 2}


def test_a_bucket_within_the_margin_keeps_the_fewer_threads():
    one, two = timed("lab", 1, 10.0, 20.0, 30.0), timed("lab", 2, 9.8, 14.0, 18.0)
    assert tuning.threads_by_rows(one, [one, two])["1"] == 1


def test_a_loaded_model_runs_each_row_bucket_on_its_measured_count(tiny_folder):
    loaded = load_model(tiny_folder)
    assert set(loaded.tuned.threads_by_rows) == {"1", "2-5", "6-17"}
    assert [threads.model_threads(loaded.model, rows) for rows in (1, 5, 9)] == [
        loaded.tuned.threads_by_rows[bucket] for bucket in ("1", "2-5", "6-17")]


def test_tune_shows_the_thread_count_per_row_bucket():
    path = replace(record(), threads_by_rows={"1": 1, "2-5": 2, "6-17": 2})
    assert "threads by rows: 1: 1, 2-5: 2, 6-17: 2" in format_path(path)


def test_a_later_candidate_within_the_margin_of_an_earlier_one_leaves_the_earlier_chosen():
    best, why = choose([figures("float32", 1, 20, 25), figures("float32", 2, 19.5, 24.5)])
    assert (best.dtype, best.threads) == ("float32", 1) and "within 5% of the fastest" in why


def test_a_new_measurement_of_a_model_on_the_lab_kernels_measures_torchs_kernels_too(monkeypatch, tmp_path):
    loaded = load_model("lab-target")
    monkeypatch.setattr(loaded, "kernels", "lab")  # what an earlier choice leaves on the shared model
    path = tuning.measure_paths(loaded, {"model": "m"}, repeats=1)
    assert {c.kernels for c in path.candidates if c.dtype == "float32"} >= {"torch"}


def test_a_gguf_carried_model_times_its_own_blocks_beside_the_float_paths(tmp_path):
    """The measured `auto` of a model carried as a GGUF: its block paths are candidates (blocks: {format: load()}),
    row-exact and keeping their own greedy identity, and what `auto` may choose when faster."""
    from specdec.models.block_model import build_block_model
    from specdec.models.loading import LoadedModel
    from specdec.runners import native_kernels

    from tests.tiny_blocks import tiny_block_config, write_tiny_block_gguf

    if not native_kernels.available():
        pytest.skip(native_kernels.unavailable_reason())
    path, reference = write_tiny_block_gguf(tmp_path / "tiny.gguf", "Q4_1")
    floats = LoadedModel("tiny", str(tmp_path), reference, None, CPU, torch.float32)
    blocks = LoadedModel("tiny", str(tmp_path), build_block_model(tiny_block_config(), path), None, CPU,
                         torch.float32, kernels="lab", weights="q4_1")
    measured = tuning.measure_paths(floats, {"model": "tiny"}, repeats=1, blocks={"q4_1": lambda: blocks})
    ours = [c for c in measured.candidates if c.dtype == "q4_1"]
    assert [c.threads for c in ours] == tuning.thread_candidates()
    assert all(c.rows_exact and c.identical and not c.excluded and c.kernels == "lab" for c in ours)
    assert ours[0].label.startswith("Q4_1 as published, lab kernels") and "Q4_1 + Q8_0 blocks" in ours[0].runner
