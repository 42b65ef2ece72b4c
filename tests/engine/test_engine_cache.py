"""Cache rollback, and both transformers cache-API generations behind cache_compat."""
import inspect

from specdec import load_model
from specdec.runners.backend import HFEagerRunner
from specdec.runners.cache_compat import CROP_BY_COUNT, CROP_BY_LENGTH, cache_argument_name, crop_cache, crop_style

import pytest
import torch
from transformers import DynamicCache

from tests.tiny_models import build_model, save, tiny_config

IDS = [4, 8, 15, 16, 23, 42, 7, 1, 3, 9]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_model(save(build_model(tiny_config("llama"), seed=0), tmp_path_factory.mktemp("cache") / "m")).model


def test_rollback_then_refeed_reproduces_the_logits(model):
    runner = HFEagerRunner(model, vocab_limit=96)
    original = runner.forward(IDS)
    runner.rollback(6)
    assert runner.length == 6
    again = runner.forward(IDS[6:])
    torch.testing.assert_close(again, original[6:], rtol=1e-5, atol=1e-5)


def test_rollback_leaves_the_cache_at_the_kept_length(model):
    runner = HFEagerRunner(model, vocab_limit=96)
    runner.prefill(IDS)
    runner.rollback(3)
    assert runner.cache.get_seq_length() == 3


class CountStyleCache:
    """transformers >= 5.24: crop(tokens_to_remove), negative only."""

    def __init__(self, length):
        self.length = length

    def crop(self, tokens_to_remove):
        if tokens_to_remove > 0:
            raise ValueError("positive crop is not supported")
        self.length += tokens_to_remove


class LengthStyleCache:
    """Older 5.x (e.g. 5.17): crop(max_length) keeps that many positions."""

    def __init__(self, length):
        self.length = length

    def crop(self, max_length):
        self.length = min(self.length, max_length)


@pytest.mark.parametrize("cache_class, style", [(CountStyleCache, CROP_BY_COUNT), (LengthStyleCache, CROP_BY_LENGTH)])
def test_crop_style_is_detected_and_used(cache_class, style):
    cache = cache_class(10)
    assert crop_style(cache) == style
    crop_cache(cache, current_length=10, keep_length=4)
    assert cache.length == 4


def test_installed_dynamic_cache_crops_to_the_kept_length(model):
    cache = DynamicCache()
    model(input_ids=torch.tensor([IDS]), **{cache_argument_name(model): cache}, use_cache=True)
    crop_cache(cache, current_length=len(IDS), keep_length=7)
    assert cache.get_seq_length() == 7


class PastKeyValuesModel(torch.nn.Module):
    """A model whose forward still takes `past_key_values=` (older transformers)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        return self.inner(input_ids=input_ids, **{cache_argument_name(self.inner): past_key_values}, use_cache=use_cache)

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()


def test_runner_passes_the_cache_under_either_argument_name(model):
    old_style = PastKeyValuesModel(model)
    assert cache_argument_name(old_style) == "past_key_values"
    assert cache_argument_name(model) in inspect.signature(model.forward).parameters
    new_logits = HFEagerRunner(model, 96).forward(IDS)
    old_logits = HFEagerRunner(old_style, 96).forward(IDS)
    torch.testing.assert_close(old_logits, new_logits)
