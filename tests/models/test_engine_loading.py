"""Loading: safetensors only, caching, local-path policy, offline hub ids, bad settings."""
from specdec import (
    DecodeSettings,
    InvalidSettingsError,
    LocalPathsDisabledError,
    ModelLoadError,
    OfflineError,
    generate,
    load_model,
)
from specdec.models import hub

import pytest
import torch

from tests.tiny_models import build_model, save, tiny_config


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save(build_model(tiny_config("llama"), seed=0), tmp_path_factory.mktemp("m") / "model")


def test_second_load_returns_the_cached_model(folder):
    assert load_model(folder) is load_model(folder)


def test_cpu_auto_dtype_is_float32(folder):
    loaded = load_model(folder)
    assert (loaded.device.type, loaded.dtype) == ("cpu", torch.float32)


def test_dtype_can_be_overridden(folder):
    assert load_model(folder, dtype="bfloat16").dtype == torch.bfloat16


def test_pickled_weights_are_refused(tmp_path):
    model = build_model(tiny_config("llama"), seed=0)
    model.config.save_pretrained(tmp_path / "pickled")  # transformers 5 writes safetensors only: pickle by hand
    torch.save(model.state_dict(), tmp_path / "pickled" / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="safetensors"):
        load_model(str(tmp_path / "pickled"))


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match="No model folder"):
        load_model(str(tmp_path / "absent"))


def test_local_paths_can_be_disabled(folder):
    with pytest.raises(LocalPathsDisabledError):
        load_model(folder, allow_local_paths=False)


def test_unreachable_hub_gives_offline_error_without_hanging(monkeypatch):
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout_s=3.0: False)
    with pytest.raises(OfflineError, match="bundled"):
        load_model("someone/not-downloaded-model")


def test_hub_reachability_respects_offline_mode(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.hub_reachable() is False


def test_nonsense_name_is_rejected():
    with pytest.raises(ModelLoadError):
        load_model("not a model name!")


def test_unknown_dtype_is_rejected(folder):
    with pytest.raises(ModelLoadError, match="dtype"):
        load_model(folder, dtype="float8")


@pytest.mark.parametrize(
    "settings",
    [DecodeSettings(k=0), DecodeSettings(max_new_tokens=0), DecodeSettings(temperature=-1.0),
     DecodeSettings(top_p=1.5), DecodeSettings(top_k=-2)],
)
def test_bad_settings_are_rejected_with_a_message(folder, settings):
    with pytest.raises(InvalidSettingsError):
        generate(load_model(folder), None, [1, 2], settings)


def test_empty_prompt_is_rejected(folder):
    with pytest.raises(InvalidSettingsError, match="empty"):
        generate(load_model(folder), None, [], DecodeSettings())


def test_out_of_vocabulary_prompt_ids_are_rejected(folder):
    with pytest.raises(InvalidSettingsError, match="out of range"):
        generate(load_model(folder), None, [1, 10_000], DecodeSettings())
