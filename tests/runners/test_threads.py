"""Thread count of a decoding step (specdec/runners/threads.py): one thread for CPU runs under
OMP_WAIT_POLICY=PASSIVE, torch's count otherwise, restored after every step."""
from specdec import DecodeSettings, load_model
from specdec.runners.threads import (
    forward_threads,
    model_threads,
    row_bucket,
    set_model_threads,
    set_row_threads,
    step_threads,
    threads_for_step,
)

import pytest
import torch

from tests.tiny_models import build_model, save, tiny_config

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


@pytest.fixture
def passive(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.delenv("SPECDEC_STEP_THREADS", raising=False)


def test_a_cpu_step_under_passive_waiting_runs_on_one_thread(passive):
    assert step_threads(CPU) == 1


def test_a_gpu_step_keeps_torchs_count(passive):
    assert step_threads(CUDA) is None


def test_without_passive_waiting_a_cpu_step_keeps_torchs_count(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("SPECDEC_STEP_THREADS", raising=False)
    assert step_threads(CPU) is None


@pytest.mark.parametrize("value, expected", [("3", 3), ("0", None), ("many", None)])
def test_the_operator_sets_the_count_for_every_cpu_run(passive, monkeypatch, value, expected):
    monkeypatch.setenv("SPECDEC_STEP_THREADS", value)
    assert step_threads(CPU) == expected


def test_the_count_is_restored_after_the_step(passive):
    before = torch.get_num_threads()
    with threads_for_step(CPU):
        inside = torch.get_num_threads()
    assert inside == 1 and torch.get_num_threads() == before


def test_the_count_is_restored_when_the_step_raises(passive):
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), threads_for_step(CPU):
        raise RuntimeError("step failed")
    assert torch.get_num_threads() == before


def test_a_run_between_its_steps_leaves_torchs_count_alone(passive, tmp_path):
    model = load_model(save(build_model(tiny_config("llama"), seed=0), tmp_path / "m"))
    before = torch.get_num_threads()
    counts = []
    from specdec.engine.decoding import Generation

    for _event in Generation(model, None, [4, 8, 15], DecodeSettings(max_new_tokens=4)):
        counts.append(torch.get_num_threads())
    assert counts == [before] * 4


def test_a_models_forwards_run_on_its_measured_count_else_the_steps(passive):
    model = build_model(tiny_config("llama"), seed=0)
    assert forward_threads(model) == 1
    set_model_threads(model, 2)
    assert forward_threads(model) == 2


@pytest.mark.parametrize("rows, bucket", [(1, "1"), (2, "2-5"), (5, "2-5"), (6, "6-17"), (17, "6-17"), (18, None)])
def test_a_forwards_new_tokens_fall_in_one_row_bucket(rows, bucket):
    assert row_bucket(rows) == bucket


def test_a_forward_runs_on_the_count_measured_for_its_rows_else_the_models(passive):
    model = build_model(tiny_config("llama"), seed=0)
    set_model_threads(model, 1)
    set_row_threads(model, {"1": 1, "2-5": 2})
    assert [model_threads(model, rows) for rows in (1, 5, 9)] == [1, 2, 1]


def test_an_explicit_count_wins_over_the_row_counts(passive, monkeypatch):
    model = build_model(tiny_config("llama"), seed=0)
    set_row_threads(model, {"2-5": 2})
    monkeypatch.setenv("SPECDEC_STEP_THREADS", "1")
    assert model_threads(model, 5) == 1
