"""dtype="auto" where it is not measured (a GPU, or SPECDEC_TUNING=0; the measured one: test_tuning.py): bfloat16 on CUDA; on a CPU only with AMX (amx_bf16) and a model large enough for halved
weight traffic to pay; float32 everywhere else, avx512_bf16 without AMX included (docs/models.md)."""
from specdec import load_model
from specdec.models import loading
from specdec.models.loading import resolve_dtype
from specdec.models.presets import resolve_model

import pytest
import torch

from tests.tiny_models import build_model, save, tiny_config

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return save(build_model(tiny_config("llama"), seed=0), tmp_path_factory.mktemp("dtype") / "model")


@pytest.fixture
def amx(monkeypatch):
    monkeypatch.setattr(loading.packed_weights, "cpu_flags", lambda: frozenset({"avx512_bf16", "amx_bf16"}))


def test_cuda_auto_is_bfloat16():
    assert resolve_dtype("auto", CUDA, "some/model") == torch.bfloat16


@pytest.mark.parametrize("flags", [set(), {"avx2"}, {"avx512f", "avx512_bf16"}])
def test_a_cpu_without_amx_stays_float32_for_every_model(monkeypatch, tiny_folder, flags):
    monkeypatch.setattr(loading.packed_weights, "cpu_flags", lambda: frozenset(flags))
    for source in (tiny_folder, "HuggingFaceTB/SmolLM2-1.7B-Instruct", None):
        assert resolve_dtype("auto", CPU, source) == torch.float32


def test_with_amx_small_models_stay_float32(amx, tiny_folder):
    assert resolve_dtype("auto", CPU, tiny_folder) == torch.float32
    assert resolve_dtype("auto", CPU, resolve_model("lab-target")) == torch.float32  # 5.9M parameters


def test_with_amx_large_models_get_bfloat16(amx, monkeypatch, tiny_folder):
    assert resolve_dtype("auto", CPU, "HuggingFaceTB/SmolLM2-1.7B-Instruct") == torch.bfloat16  # hub: large
    monkeypatch.setattr(loading, "BF16_MIN_PARAMS", 1000)  # make the tiny folder count as large
    monkeypatch.setenv("SPECDEC_TUNING", "0")  # the rules, not the measured auto (tests/runners/test_tuning.py)
    assert resolve_dtype("auto", CPU, tiny_folder) == torch.bfloat16
    assert load_model(tiny_folder).dtype == torch.bfloat16


def test_an_explicit_dtype_always_wins(amx, monkeypatch, tiny_folder):
    monkeypatch.setattr(loading, "BF16_MIN_PARAMS", 1000)
    assert resolve_dtype("float32", CPU, tiny_folder) == torch.float32
    assert load_model(tiny_folder, dtype="float32").dtype == torch.float32


def test_parameters_are_counted_from_the_safetensors_headers(tiny_folder):
    model = build_model(tiny_config("llama"), seed=0)
    stored = {name: p for name, p in model.state_dict().items() if name != "lm_head.weight" or
              not model.config.tie_word_embeddings}
    assert loading.parameter_count(tiny_folder) == sum(p.numel() for p in stored.values())
