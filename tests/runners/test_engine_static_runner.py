"""The static-cache Llama runner computes what transformers computes, and is picked only where it fits."""
from specdec import DecodeSettings, generate, load_model
from specdec.runners.backend import HFEagerRunner
from specdec.runners.static import StaticLlamaRunner

import pytest
import torch

from tests.tiny_models import IDS, build_model, drive, perturbed_copy, save, tiny_config


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def loaded(request, tmp_path_factory):
    return load_model(save(build_model(tiny_config(request.param), seed=0), tmp_path_factory.mktemp(request.param) / "m"))


def test_static_runner_logits_match_transformers(loaded):
    static = drive(StaticLlamaRunner(loaded.model, 96, max_length=32))
    eager = drive(HFEagerRunner(loaded.model, 96))
    for ours, theirs in zip(static, eager):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_llama_family_gets_the_static_runner(loaded):
    assert loaded.runner_kind == "static"


def test_other_architectures_keep_the_hf_runner(tmp_path):
    assert load_model(save(build_model(tiny_config("gpt2"), seed=0), tmp_path / "gpt2")).runner_kind == "hf-eager"


def test_full_static_cache_is_an_error_not_a_silent_overwrite(loaded):
    runner = StaticLlamaRunner(loaded.model, 96, max_length=4)
    with pytest.raises(RuntimeError, match="full"):
        runner.prefill(IDS[:5])


@pytest.mark.parametrize("k", [1, 4])
def test_both_runners_give_the_same_greedy_output(tmp_path, k):
    target_model = build_model(tiny_config("llama"), seed=5)
    target = load_model(save(target_model, tmp_path / "t"))
    draft = load_model(save(perturbed_copy(target_model, 0.3, seed=6), tmp_path / "d"))
    settings = DecodeSettings(k=k, max_new_tokens=24)
    static = generate(target, draft, IDS[:5], settings).token_ids
    target.backend = draft.backend = "hf-eager"
    try:
        assert generate(target, draft, IDS[:5], settings).token_ids == static
    finally:
        target.backend = draft.backend = "auto"


def test_a_chain_token_attends_row_by_row_to_the_prefix_a_one_token_forward_sees():
    from specdec.runners.static import visible_rows

    mask = torch.ones(3, 7, dtype=torch.bool).tril(diagonal=4)  # 4 cached positions, 3 new tokens
    assert visible_rows(mask, causal=True) == [5, 6, 7]


def test_a_tree_node_attends_row_by_row_to_the_cache_its_ancestors_and_itself_in_depth_order():
    from specdec.runners.tree_attention import ancestor_mask
    from specdec.runners.static import visible_rows

    parents = [-1, -1, 0, 2]  # nodes 0 and 1 under the root, 2 under 0, 3 under 2
    mask = torch.cat([torch.ones(5, 2, dtype=torch.bool), ancestor_mask(parents, torch.device("cpu"))], dim=1)
    rows = [r.tolist() for r in visible_rows(mask, causal=False)]
    assert rows == [[0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 4], [0, 1, 2, 3, 5], [0, 1, 2, 3, 5, 6]]
