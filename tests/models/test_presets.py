"""The preset registry: SmolLM2 first and default, the bundled family next, memory figures, names."""
from pathlib import Path

from specdec.models import presets
from specdec.models.presets import (
    BUNDLED_DIR,
    DEFAULT_DRAFT,
    DEFAULT_TARGET,
    LAB_DRAFT,
    LAB_TARGET,
    PAIR_PRESETS,
    all_model_choices,
    bundled_model_names,
    is_bundled,
    resolve_model,
)


def test_the_fetched_real_model_comes_first_and_is_the_default():
    first = PAIR_PRESETS[0]
    assert first.fetched and not first.bundled
    assert first.target == DEFAULT_TARGET == "smollm2-135m-instruct"
    assert first.drafts[0] == DEFAULT_DRAFT


def test_the_default_draft_is_the_targets_preset_first_else_prompt_lookup():
    assert presets.default_draft(DEFAULT_TARGET) == DEFAULT_DRAFT
    assert presets.default_draft(LAB_TARGET) == LAB_DRAFT
    assert presets.default_draft("/some/folder") == presets.ANY_TARGET_DRAFT == "prompt-lookup"


def test_the_bundled_lab_family_comes_second():
    lab = PAIR_PRESETS[1]
    assert lab.bundled and (lab.target, lab.drafts[0]) == (LAB_TARGET, LAB_DRAFT) == ("lab-target", "lab-draft-distilled")
    assert all(not p.bundled and not p.fetched for p in PAIR_PRESETS[2:])


def test_prompt_lookup_drafts_for_every_offline_preset():
    assert all("prompt-lookup" in p.drafts for p in PAIR_PRESETS[:2])


def test_every_preset_is_complete():
    keys = [p.key for p in PAIR_PRESETS]
    assert len(keys) == len(set(keys))
    for preset in PAIR_PRESETS:
        assert preset.label and preset.target and preset.drafts and preset.note
        assert preset.approx_memory_gb > 0
        assert preset.target not in preset.drafts


def test_online_families_are_covered():
    targets = " ".join(p.target for p in PAIR_PRESETS)
    for family in ("SmolLM2-1.7B", "Qwen2.5-1.5B", "Qwen2.5-7B", "gpt2-large", "gpt2-xl",
                   "pythia-1.4b", "pythia-6.9b", "Llama-3.1-8B"):
        assert family in targets


def test_bigger_targets_need_more_memory():
    memory = {p.key: p.approx_memory_gb for p in PAIR_PRESETS}
    assert memory["lab"] < memory["gpt2-large"] < memory["gpt2-xl"]
    assert memory["qwen2.5-1.5b"] < memory["qwen2.5-7b"]
    assert memory["pythia-1.4b"] < memory["pythia-6.9b"]


def test_bundled_dir_is_the_repository_assets_folder():
    assert BUNDLED_DIR == Path(__file__).resolve().parents[2] / "assets" / "models"


def test_bundled_names_and_resolution():
    names = bundled_model_names()
    for name in ("lab-target", "lab-draft-small", "lab-draft-distilled"):
        assert name in names
        assert is_bundled(name)
        resolved = Path(resolve_model(name))
        assert resolved.is_absolute() and (resolved / "config.json").is_file()
    assert not is_bundled("gpt2")
    assert resolve_model("HuggingFaceTB/SmolLM2-135M") == "HuggingFaceTB/SmolLM2-135M"
    assert resolve_model("/some/local/path") == "/some/local/path"


def test_bundled_names_follow_the_folder(tmp_path, monkeypatch):
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "config.json").write_text("{}")
    (tmp_path / "not-a-model").mkdir()
    monkeypatch.setattr(presets, "BUNDLED_DIR", tmp_path)
    assert bundled_model_names() == ["alpha"]
    assert resolve_model("alpha") == str(tmp_path / "alpha")
    assert resolve_model("not-a-model") == "not-a-model"
    monkeypatch.setattr(presets, "BUNDLED_DIR", tmp_path / "missing")
    assert bundled_model_names() == []


def test_all_choices_bundled_first_without_duplicates():
    choices = all_model_choices()
    bundled = bundled_model_names()
    assert choices[:len(bundled)] == bundled
    assert len(choices) == len(set(choices))
    for preset in PAIR_PRESETS:
        assert preset.target in choices
        assert all(d in choices for d in preset.drafts)
