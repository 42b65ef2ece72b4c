"""Draft/target compatibility: same token -> id map required; padded embedding sizes are fine."""
from specdec import DecodeSettings, IncompatibleModelsError, check_compatible, generate, load_model

import pytest

from tests.tiny_models import build_model, save, tiny_config
from tests.tiny_tokenizers import WORDS, word_tokenizer


def save_with_tokenizer(folder, tokenizer, embedding_rows, seed, arch="llama"):
    model = build_model(tiny_config(arch, vocab_size=embedding_rows), seed=seed)
    save(model, folder, eos_token_id=tokenizer.eos_token_id)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairs")
    shared = word_tokenizer(WORDS)
    other = word_tokenizer(list(reversed(WORDS)))
    return {
        "target": save_with_tokenizer(root / "target-padded-to-64", shared, 64, seed=0),
        "draft": save_with_tokenizer(root / "draft-padded-to-40", shared, 40, seed=1),
        "foreign": save_with_tokenizer(root / "foreign-vocab", other, 64, seed=2, arch="gpt2"),
    }


def test_drafts_with_differently_padded_embeddings_are_compatible(folders):
    target, draft = load_model(folders["target"]), load_model(folders["draft"])
    assert target.embedding_rows != draft.embedding_rows
    check_compatible(target, draft)


def test_padded_pair_decodes_over_the_real_vocabulary(folders):
    target, draft = load_model(folders["target"]), load_model(folders["draft"])
    result = generate(target, draft, target.encode("the cat sat"), DecodeSettings(k=3, max_new_tokens=12))
    baseline = generate(target, None, target.encode("the cat sat"), DecodeSettings(max_new_tokens=12))
    assert result.token_ids == baseline.token_ids
    assert all(token < len(target.tokenizer) for token in result.token_ids)


def test_vocabulary_mismatch_names_both_models_and_the_difference(folders):
    target, foreign = load_model(folders["target"]), load_model(folders["foreign"])
    with pytest.raises(IncompatibleModelsError) as error:
        check_compatible(target, foreign)
    message = str(error.value)
    assert folders["target"] in message and folders["foreign"] in message
    assert "different ids" in message


def test_generation_refuses_an_incompatible_pair(folders):
    target, foreign = load_model(folders["target"]), load_model(folders["foreign"])
    with pytest.raises(IncompatibleModelsError):
        generate(target, foreign, target.encode("the cat"), DecodeSettings(max_new_tokens=4))
