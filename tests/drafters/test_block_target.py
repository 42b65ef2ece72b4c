"""Exact on a GGUF's blocks (models/block_model.py) as on every other path: greedy speculation emits the target's own
greedy tokens with every drafter, and sampled speculation draws from the target's own warped law (chi-square, as in
test_zoo_heads.py: the first two tokens of 20,000 seeded runs against the enumerated law, p >= 0.001).

The sampling tests run on a tiny Llama GGUF of Q4_1 layers and Q8_0 tied embeddings (tests/tiny_blocks.py), its
vocabulary cut to 6 ids by its tokenizer's size (the head has 96 rows; a run scores ids 0-5), with random drafters of
every family: the heads (Medusa, EAGLE, EAGLE-3), a draft model ending in the head's own blocks gathered, an early
exit over the target's first block layer, and prompt lookup. The target's law is its own: a fresh runner's prefill of
each context (every row of the block kernels is the bits of a one-token forward). The greedy tests run the real
fetched SmolLM2 file (skipped where it is not fetched) with the shipped zoo."""
from __future__ import annotations

from specdec import DecodeSettings
from specdec.drafters.draft_model import vocab_drafter
from specdec.drafters.early_exit import EarlyExitDrafter
from specdec.drafters.prompt_lookup import PromptLookupDrafter
from specdec.models.block_model import build_block_model
from specdec.models.loading import LoadedModel
from specdec.planning.run import generate
from specdec.runners import native_kernels
from specdec.runners.lab_kernels import LabKernelRunner

import pytest
import torch
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

from tests.distribution import exact_first_two, speculative_counts
from tests.drafters.test_zoo_heads import DRAFT_VOCAB, PROMPT, random_eagle, random_eagle3, random_medusa
from tests.stats import chi_square_p_value
from tests.tiny_blocks import tiny_block_config, write_tiny_block_gguf

pytestmark = pytest.mark.skipif(not native_kernels.available(), reason=native_kernels.unavailable_reason())
VOCAB = 6
SAMPLES = 20_000
P_VALUE_THRESHOLD = 1e-3


class SixIds:
    """A tokenizer stand-in of 6 ids: the run's vocabulary (LoadedModel.real_vocab_size) is cut to them."""

    def __len__(self):
        return VOCAB

    def decode(self, ids, **_):
        return " ".join(map(str, ids))


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    path, _ = write_tiny_block_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", "Q4_1", seed=5)
    model = build_block_model(tiny_block_config(), path)
    return LoadedModel("tiny-blocks", str(path), model, SixIds(), torch.device("cpu"), torch.float32, kernels="lab",
                       weights="q4_1")


def own_layer(target, seed: int, index: int) -> LlamaDecoderLayer:
    torch.manual_seed(seed)
    layer = LlamaDecoderLayer(target.model.config, layer_idx=index).eval()
    for weight in layer.parameters():
        torch.nn.init.normal_(weight, std=0.3)
    return layer


def block_draft_model(target, seed=3, vocab=VOCAB, draft_vocab=DRAFT_VOCAB):
    """A one-layer draft model on the target's block embedding, ending in the head rows of draft_vocab."""
    from specdec.drafters.draft_model import DraftVocabModelDrafter

    layer = own_layer(target, seed, 0)
    drafter = vocab_drafter(DraftVocabModelDrafter, target, "tiny-draft", "", [layer], [layer],
                            {"draft_vocab": draft_vocab})
    drafter.vocab_limit = vocab
    return drafter


def block_early_exit(target, seed=4, vocab=VOCAB, draft_vocab=DRAFT_VOCAB):
    """The target's first block layer, one adapter layer of its own, the head rows of draft_vocab."""
    adapter = own_layer(target, seed, 1)
    drafter = vocab_drafter(EarlyExitDrafter, target, "tiny-early-exit", "",
                            [target.model.model.layers[0], adapter], [adapter], {"draft_vocab": draft_vocab})
    drafter.vocab_limit = vocab
    return drafter


def prompt_lookup(target, vocab=VOCAB):
    return PromptLookupDrafter(vocab, target.device)


MAKERS = [random_medusa, random_eagle, random_eagle3, block_draft_model, block_early_exit, prompt_lookup]
MAKER_IDS = ["medusa", "eagle", "eagle3", "draft", "early-exit", "prompt-lookup"]


def next_logits(target):
    def fn(seq):
        return LabKernelRunner(target.model, VOCAB, len(seq) + 1).prefill(seq).reshape(-1)[:VOCAB]
    return fn


@pytest.mark.parametrize("make", MAKERS, ids=MAKER_IDS)
def test_sampled_speculation_on_blocks_follows_the_targets_law(target, make):
    settings = DecodeSettings(temperature=1.0)
    counts = speculative_counts(target, make(target), settings, SAMPLES, PROMPT, VOCAB)
    expected = exact_first_two(next_logits(target), settings, PROMPT, VOCAB)
    assert counts[expected == 0].sum() == 0
    assert chi_square_p_value(counts, expected) >= P_VALUE_THRESHOLD


@pytest.mark.parametrize("make", MAKERS, ids=MAKER_IDS)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_greedy_speculation_on_blocks_is_the_target_alone(target, make, k):
    settings = DecodeSettings(max_new_tokens=20, k=k)
    alone = generate(target, None, PROMPT, settings).token_ids
    assert generate(target, make(target), PROMPT, settings).token_ids == alone


# --- the real file ------------------------------------------------------------------------------------------

ZOO = ("prompt-lookup", "suffix", "smollm2-135m-draft", "smollm2-135m-early-exit", "smollm2-135m-medusa",
       "smollm2-135m-eagle", "smollm2-135m-eagle3", "smollm2-135m-eagle-tree", "smollm2-135m-eagle-tree-60",
       "smollm2-135m-eagle3-tree")
SETTINGS = DecodeSettings(max_new_tokens=24, k=4)


@pytest.fixture(scope="module")
def smollm2_blocks():
    from specdec.models.loading import load_model

    try:
        return load_model("smollm2-135m-instruct", dtype="q4_1")
    except Exception as exc:  # offline without the fetched file
        pytest.skip(f"smollm2-135m-instruct's GGUF is not available: {exc}")


@pytest.fixture(scope="module")
def chat_ids(smollm2_blocks):
    from specdec.models.prompting import encode_prompt

    return encode_prompt(smollm2_blocks, "Explain why the sky is blue in two sentences.", chat=True)


@pytest.mark.parametrize("name", ZOO)
def test_every_zoo_drafter_on_the_published_q4_1_file_emits_its_greedy_tokens(name, smollm2_blocks, chat_ids):
    from specdec.drafters.registry import load_drafter, registered

    if name not in ("prompt-lookup", "suffix") and registered(name) is None:
        pytest.skip(f"{name}'s weights are not in assets/drafters/")
    alone = generate(smollm2_blocks, None, chat_ids, SETTINGS).token_ids
    assert generate(smollm2_blocks, load_drafter(name, smollm2_blocks), chat_ids, SETTINGS).token_ids == alone


def test_the_published_file_runs_in_its_own_92_mib_and_says_so(smollm2_blocks):
    assert smollm2_blocks.weights_label == "Q4_1 as published"
    assert smollm2_blocks.param_bytes <= 150 * 2 ** 20
    assert "Q4_1 + Q8_0 blocks" in smollm2_blocks.runner_kind
