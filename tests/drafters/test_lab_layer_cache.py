"""An EAGLE head's layers on the lab kernels (drafters/lab_layer_cache.py), where its target runs on them: the same
features as the torch cache of its int8 rows up to the order of sums and its inputs' int16 rounding, greedy output the target's own, sampled output the target's
law (chi-square as in test_zoo_heads.py)."""
from __future__ import annotations

import copy

from specdec import DecodeSettings
from specdec.drafters.eagle import EagleDrafter
from specdec.drafters.heads import EagleHead, LayerCache
from specdec.drafters.lab_layer_cache import LabLayerCache, layer_cache
from specdec.engine.decoding import Generation
from specdec.models.loading import LoadedModel
from specdec.runners import native_kernels

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from tests.distribution import exact_first_two, speculative_counts
from tests.stats import chi_square_p_value

pytestmark = pytest.mark.skipif(not native_kernels.available(), reason=native_kernels.unavailable_reason())
VOCAB = 64
PROMPT = [5, 9, 11]
LAYOUTS = ["fc", "concat"]  # EAGLE's fc input, EAGLE-3's [norm(embedding); norm(feature)]


def float16_values(module):
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(param.half().float())
    return module


def kernel_target(kernels: str = "lab") -> LoadedModel:
    """A tiny Llama the kernels fit (64 wide, heads of 16, weights that are float16 values)."""
    torch.manual_seed(3)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         initializer_range=0.3, bos_token_id=None, eos_token_id=None, pad_token_id=None,
                         tie_word_embeddings=True)
    model = float16_values(LlamaForCausalLM(config).eval())
    return LoadedModel("tiny-kernel-target", "tiny", model, None, torch.device("cpu"), torch.float32, kernels=kernels)


def kernel_head_drafter(target: LoadedModel, layout: str) -> EagleDrafter:
    torch.manual_seed(5)
    head = EagleHead(target.model.config, input_layout=layout, intermediate_size=96)
    with torch.no_grad():
        for module in head.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.normal_(std=0.3)
            elif hasattr(module, "variance_epsilon"):  # RMSNorms away from one: a norm read in the wrong place shows
                module.weight.uniform_(0.5, 1.5)
    return EagleDrafter(target, VOCAB, float16_values(head), torch.arange(0, VOCAB, 2), "tiny-eagle", "")


@pytest.mark.parametrize("kernels, kind", [("lab", LabLayerCache), ("torch", LayerCache)])
def test_a_heads_layers_run_on_the_lab_kernels_where_its_target_does(kernels, kind):
    drafter = kernel_head_drafter(kernel_target(kernels), "concat")
    drafter.start(PROMPT, 64)
    assert type(drafter.cache) is kind


def test_layers_the_kernels_do_not_fit_keep_the_torch_cache():
    head = EagleHead(kernel_target().model.config, intermediate_size=40)  # 40: not a multiple of a packed group
    assert type(layer_cache(head.layers, head.config, 16, torch.float32, "lab", lambda rows: 2)) is LayerCache


def as_int8_rows(layers):
    """A copy of the layers whose matrices are the int8 rows the lab cache packs them into (what it computes with)."""
    copied = copy.deepcopy(layers)
    with torch.no_grad():
        for module in copied.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.copy_(native_kernels.pack_int8(module.weight).matrix().float())
    return copied


def within_a_thousandth(features: torch.Tensor, expected: torch.Tensor) -> bool:
    return (features - expected).abs().max() <= 1e-3 * expected.abs().max()


@pytest.mark.parametrize("build", ["native", "avx2"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_lab_cache_computes_the_torch_caches_features_of_its_int8_rows(layout, build, avx2_kernels, monkeypatch):
    # features of ~10: sums in another order, and each input row rounded to int16 steps (1/16,383 of its largest)
    if build == "avx2":  # the AVX2 build's int8 products (vpmaddwd) beside the machine's own (VNNI where it has it)
        monkeypatch.setitem(native_kernels._STATE, "library", avx2_kernels)
    head = kernel_head_drafter(kernel_target(), layout).head
    width = head.config.hidden_size * (2 if layout == "concat" else 1)
    lab = LabLayerCache(head.layers, head.config, 32, lambda rows: 2)
    torch_cache = LayerCache(as_int8_rows(head.layers), head.config, 32, torch.float32)
    generator = torch.Generator().manual_seed(0)
    chain = [torch.randn(n, width, generator=generator) for n in (3, 1, 2)]
    for hidden in chain:  # a chain: causal, slot = rotary position
        assert within_a_thousandth(lab.forward(hidden), torch_cache.forward(hidden))
    tree = torch.randn(3, width, generator=generator)  # three siblings at one depth, each seeing the chain and itself
    mask = torch.cat([torch.ones(3, 6, dtype=torch.bool), torch.eye(3, dtype=torch.bool)], dim=1)
    assert within_a_thousandth(lab.forward(tree, positions=[6, 6, 6], mask=mask),
                               torch_cache.forward(tree, positions=[6, 6, 6], mask=mask))


def test_a_heads_layers_on_the_lab_kernels_are_int8_rows_where_every_width_is_even():
    head = kernel_head_drafter(kernel_target(), "concat").head
    assert all(packed.scales is not None for packed in LabLayerCache(head.layers, head.config, 8, lambda rows: 1).packed)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("k", [1, 4])
def test_greedy_output_is_the_target_alone_with_the_heads_layers_on_the_lab_kernels(layout, k):
    target = kernel_target()
    settings = DecodeSettings(max_new_tokens=20, k=k)
    alone = Generation(target, None, PROMPT, settings).result().token_ids
    assert Generation(target, kernel_head_drafter(target, layout), PROMPT, settings).result().token_ids == alone


def test_sampled_output_follows_the_target_law_with_the_heads_layers_on_the_lab_kernels():
    target, settings = kernel_target(), DecodeSettings(temperature=1.0)
    counts = speculative_counts(target, kernel_head_drafter(target, "concat"), settings, 20_000, PROMPT, VOCAB)

    def next_logits(seq):
        with torch.no_grad():
            return target.model(torch.tensor([seq])).logits[0, -1].float()

    expected = exact_first_two(next_logits, settings, PROMPT, VOCAB)
    assert counts[expected == 0].sum() == 0
    assert chi_square_p_value(counts, expected) >= 1e-3
