"""The bundled family in assets/models: loads, compatibility, size budget, cards, pinned outputs.

The pins are greedy continuations of PIN_PROMPT in float32, regenerated with
``python -m training pins`` whenever the family is retrained on purpose.
"""
import time

from specdec.models.presets import (
    BUNDLED_DIR,
    bundled_model_names,
)
from specdec.models.presets import (
    LAB_DRAFT as DEFAULT_DRAFT,
)
from specdec.models.presets import (
    LAB_TARGET as DEFAULT_TARGET,
)

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

from training.lab_family.measure import PIN_PROMPT, PIN_TOKENS, greedy_continuation

REQUIRED = ("lab-target", "lab-draft-small", "lab-draft-distilled")
OPTIONAL = ("lab-draft-tiny",)
MODELS = REQUIRED + tuple(name for name in OPTIONAL if name in bundled_model_names())
DRAFTS = tuple(name for name in MODELS if name != "lab-target")
SIZE_BUDGET_BYTES = 40 * 1000 * 1000
LOAD_BUDGET_S = 2.0
CARD_FIELDS = (
    "Parameters", "Layers", "Hidden size", "Attention heads", "Tokens seen", "Corpus and licence",
    "PSF License", "Held-out loss", "code", "prose", "Perplexity", "K=4", "Acceptance rate",
    "Mean tokens per target forward", "greedy", "T=1", "Greedy samples", "Rebuild",
    "python -m training build", "python -m training cards",
)
PINS = {
    "lab-target": [279, 391, 606, 278, 745, 337, 278, 745, 337, 278, 745, 337, 278, 745, 337, 278],
    "lab-draft-distilled": [17, 12, 652, 12, 652, 12, 652, 12, 652, 12, 652, 12, 652, 12, 652, 12],
    "lab-draft-small": [279, 391, 279, 317, 380, 893, 8, 1031, 12, 643, 322, 272, 342, 307, 14, 1031],
    "lab-draft-tiny": [272, 391, 272, 391, 272, 391, 272, 391, 272, 391, 272, 391, 272, 391, 272, 391],
}


def load(name):
    folder = BUNDLED_DIR / name
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    return model.eval(), AutoTokenizer.from_pretrained(str(folder))


def test_required_models_are_bundled():
    assert set(REQUIRED) <= set(bundled_model_names())
    assert DEFAULT_TARGET in MODELS and DEFAULT_DRAFT in MODELS


@pytest.mark.parametrize("name", MODELS)
def test_model_and_tokenizer_load_with_plain_transformers(name):
    model, tokenizer = load(name)
    assert isinstance(model, LlamaForCausalLM)
    assert model.config.vocab_size == 4096 == len(tokenizer)
    assert model.config.max_position_embeddings >= 1024
    assert tokenizer.eos_token == "<|endoftext|>"
    assert model.config.eos_token_id == tokenizer.eos_token_id == model.generation_config.eos_token_id
    text = "def add(a, b):\n    return a + b\n"
    assert tokenizer.decode(tokenizer(text).input_ids) == text


def test_family_shares_one_tokenizer():
    reference = (BUNDLED_DIR / "lab-target" / "tokenizer.json").read_bytes()
    for name in DRAFTS:
        assert (BUNDLED_DIR / name / "tokenizer.json").read_bytes() == reference, name


def test_drafts_are_smaller_than_the_target():
    sizes = {name: load(name)[0].num_parameters() for name in MODELS}
    assert all(sizes[d] < sizes["lab-target"] for d in DRAFTS)
    assert sizes["lab-draft-distilled"] == sizes["lab-draft-small"]
    if "lab-draft-tiny" in sizes:
        assert sizes["lab-draft-tiny"] < sizes["lab-draft-small"] / 2


@pytest.mark.parametrize("draft_name", DRAFTS)
def test_every_draft_is_compatible_with_the_target(draft_name):
    from specdec import check_compatible, load_model

    check_compatible(load_model("lab-target", device="cpu"), load_model(draft_name, device="cpu"))


def test_size_budget():
    total = sum(p.stat().st_size for p in BUNDLED_DIR.rglob("*") if p.is_file())
    assert total <= SIZE_BUDGET_BYTES, f"bundled family is {total / 1e6:.1f} MB"


def test_default_pair_loads_within_budget():
    load(DEFAULT_TARGET), load(DEFAULT_DRAFT)  # warm imports and the page cache
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        load(DEFAULT_TARGET), load(DEFAULT_DRAFT)
        best = min(best, time.perf_counter() - start)
    assert best <= LOAD_BUDGET_S, f"default pair took {best:.2f} s to load"


@pytest.mark.parametrize("name", MODELS)
def test_card_has_required_fields(name):
    card = (BUNDLED_DIR / name / "README.md").read_text()
    missing = [field for field in CARD_FIELDS if field not in card]
    assert not missing, f"{name}/README.md lacks {missing}"
    if name != "lab-target":
        assert name in card.split("Acceptance rate", 1)[1]


@pytest.mark.parametrize("name", MODELS)
def test_pinned_greedy_continuation(name):
    model, tokenizer = load(name)
    assert greedy_continuation(model, tokenizer, PIN_PROMPT, PIN_TOKENS) == PINS[name]
