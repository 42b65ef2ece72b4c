"""The training pipeline end to end on the 'tiny' profile (seconds), into tmp_path."""
import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

from training.lab_family.configs import DRAFT_DISTILLED, DRAFT_SMALL, DRAFT_TINY, PROFILES, TARGET
from training.lab_family.corpus import build_corpus, is_held_out
from training.lab_family.loop import Schedule
from training.lab_family.pipeline import build_family

NAMES = (TARGET, DRAFT_SMALL, DRAFT_TINY, DRAFT_DISTILLED)


def quiet(_message: str) -> None:
    pass


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    out = tmp_path_factory.mktemp("family")
    summary = build_family(PROFILES["tiny"], out, seed=0, threads=1, command="tiny-test", log=quiet)
    return out, summary


def test_build_writes_every_folder(family):
    out, summary = family
    assert sorted(summary["models"]) == sorted(NAMES)
    for name in NAMES:
        folder = out / name
        for filename in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                         "tokenizer_config.json", "training.json"):
            assert (folder / filename).is_file(), f"{name}/{filename}"
    assert not [p for p in out.iterdir() if p.name not in NAMES], "staging leftovers in the output folder"


def test_folders_load_with_plain_transformers(family):
    out, _ = family
    for name in NAMES:
        model = AutoModelForCausalLM.from_pretrained(str(out / name))
        tokenizer = AutoTokenizer.from_pretrained(str(out / name))
        assert isinstance(model, LlamaForCausalLM)
        assert model.dtype == torch.float32
        assert tokenizer.eos_token == "<|endoftext|>"
        assert model.config.eos_token_id == tokenizer.eos_token_id == model.generation_config.eos_token_id
        assert model.config.max_position_embeddings >= 1024
        ids = tokenizer("def f(x):\n    return x", return_tensors="pt").input_ids
        assert model(ids).logits.shape[-1] == model.config.vocab_size


def test_training_records(family):
    out, _ = family
    for name in NAMES:
        record = json.loads((out / name / "training.json").read_text())
        assert record["command"] == "tiny-test"
        assert record["training"]["tokens_seen"] > 0
        assert set(record["heldout_at_training"]) == {"code", "prose"}
        assert "PSF" in record["corpus"]["licence"]
    distilled = json.loads((out / DRAFT_DISTILLED / "training.json").read_text())
    assert distilled["teacher"] == TARGET and "KL" in distilled["objective"]


def test_build_is_deterministic(family, tmp_path):
    out, _ = family
    build_family(PROFILES["tiny"], tmp_path, seed=0, threads=1, command="tiny-test", log=quiet)
    for name in NAMES:
        assert (tmp_path / name / "model.safetensors").read_bytes() == (out / name / "model.safetensors").read_bytes()
        assert (tmp_path / name / "tokenizer.json").read_text() == (out / name / "tokenizer.json").read_text()


def test_cards_from_the_built_family(family):
    from training.lab_family.cards import write_all_cards

    out, _ = family
    write_all_cards(out, prompts_per_kind=1, max_new_tokens=6, docs_path=None)
    card = (out / DRAFT_DISTILLED / "README.md").read_text()
    for field in ("Parameters", "Tokens seen", "Held-out loss", "Acceptance rate", "Greedy samples", "tiny-test"):
        assert field in card


def test_split_is_stable_and_disjoint():
    assert is_held_out("json/decoder.py", 40) == is_held_out("json/decoder.py", 40)
    corpus = build_corpus(max_code_files=10, max_topics=5, heldout_every=3)
    assert corpus.code_train and corpus.prose_train
    assert not set(corpus.code_train) & set(corpus.code_heldout)


def test_schedule_warms_up_then_decays():
    schedule = Schedule(steps=100, lr=1e-3, warmup_steps=10)
    lrs = [schedule.lr_at(s) for s in range(100)]
    assert lrs[0] < lrs[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    assert lrs[-1] == pytest.approx(1e-4, rel=0.05)
