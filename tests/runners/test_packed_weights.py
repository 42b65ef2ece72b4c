"""Packed weight copies (specdec/runners/packed_weights.py): float16 copies of float32 weights made only where exact,
oneDNN-packed copies of bfloat16 weights where the CPU computes bf16 natively; same maths, counted as weights."""
from specdec import DecodeSettings, generate, load_model
from specdec.runners import packed_weights
from specdec.runners.backend import HFEagerRunner
from specdec.runners.packed_weights import Bf16Linear, Fp16Linear, exact_in_float16, linear, weights_for
from specdec.runners.static import StaticLlamaRunner

import pytest
import torch

from tests.tiny_models import build_model, save, tiny_config

IDS = [4, 8, 15, 16, 23, 42, 7, 1, 3, 9, 11, 2]
needs_fbgemm = pytest.mark.skipif(not packed_weights.fp16_available(), reason="this torch has no FBGEMM float16 GEMM")
needs_native_bf16 = pytest.mark.skipif(not packed_weights.bf16_available(),
                                       reason="this CPU does not compute bf16 natively (or oneDNN is missing)")
needs_amx = pytest.mark.skipif(not (packed_weights.bf16_available() and packed_weights.cpu_has_amx_bf16()),
                               reason="row-exact bf16 products are measured only with AMX (where auto picks bf16)")
SHAPES = [(1536, 576), (576, 1536), (576, 576), (192, 576), (4096, 576)]  # SmolLM2's [out, in], a head slice
ROW_COUNTS = [(0, 1), (3, 1), (0, 2), (5, 5), (1, 9), (2, 3), (7, 17), (2, 33), (0, 61)]  # (first row, rows)


def heavy_tailed_rows(width: int, dtype) -> torch.Tensor:
    """[1, 64, width]: activations with a decoder MLP's outliers (Gaussian rows rarely reveal a kernel that
    sums a single row in another order)."""
    generator = torch.Generator().manual_seed(0)
    rows = torch.randn(1, 64, width, generator=generator) * torch.rand(1, 64, width, generator=generator).pow(4) * 8
    return rows.to(dtype)


def rows_depend_on_their_company(weights, hidden) -> bool:
    every_row = linear(hidden, weights)
    return not all(torch.equal(linear(hidden[:, start:start + rows], weights), every_row[:, start:start + rows])
                   for start, rows in ROW_COUNTS)


def assert_rows_do_not_depend_on_their_company(weights, hidden):
    assert not rows_depend_on_their_company(weights, hidden)


def float16_valued(model):
    """The model with every weight rounded to a float16 value (still float32 tensors), as SmolLM2's are."""
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(param.to(torch.float16).float())
    return model


@pytest.fixture(scope="module")
def exact_model(tmp_path_factory):
    return load_model(save(float16_valued(build_model(tiny_config("llama"), seed=0)),
                           tmp_path_factory.mktemp("exact") / "m"))


def test_a_weight_with_values_float16_cannot_hold_gets_no_copy():
    weight = torch.full((8, 4), 0.1)  # 0.1 in float32 is not a float16 value
    assert not exact_in_float16(weight) and weights_for(weight)[0] is weight


@needs_fbgemm
def test_a_weight_exact_in_float16_gets_a_copy_of_half_its_bytes():
    weight = torch.randn(8, 4).half().float()
    copy = weights_for(weight)
    assert isinstance(copy, Fp16Linear) and copy.nbytes == weight.numel() * 2


@needs_fbgemm
def test_a_weight_changed_in_place_gets_a_fresh_copy():
    weight = torch.randn(8, 4).half().float()
    first = weights_for(weight)
    with torch.no_grad():
        weight.mul_(2)
    hidden = torch.randn(1, 4)
    assert weights_for(weight) is not first
    torch.testing.assert_close(linear(hidden, weights_for(weight)), hidden @ weight.T)


@needs_fbgemm
def test_a_weight_made_in_inference_mode_gets_a_copy():
    with torch.inference_mode():
        weight = torch.randn(8, 4).half().float()
    assert isinstance(weights_for(weight), Fp16Linear)


def test_bfloat16_weights_are_left_to_torch_on_a_cpu_without_native_bf16(monkeypatch):
    monkeypatch.setattr(packed_weights, "cpu_has_native_bf16", lambda: False)
    weight = torch.randn(8, 4).to(torch.bfloat16)
    assert weights_for(weight)[0] is weight


@needs_native_bf16
def test_a_bfloat16_weight_gets_a_packed_copy_of_its_bytes():
    weight = torch.randn(8, 4).to(torch.bfloat16)
    copy = weights_for(weight)
    assert isinstance(copy, Bf16Linear) and copy.nbytes == weight.numel() * 2


@needs_native_bf16
def test_the_packed_bfloat16_copy_computes_what_f_linear_computes():
    weight, bias = torch.randn(48, 32).to(torch.bfloat16), torch.randn(48).to(torch.bfloat16)
    hidden = torch.randn(1, 5, 32).to(torch.bfloat16)
    expected = torch.nn.functional.linear(hidden.double(), weight.double(), bias.double())
    torch.testing.assert_close(linear(hidden, weights_for(weight, bias)).double(), expected, rtol=2e-2, atol=2e-2)


@needs_amx
@pytest.mark.parametrize("shape", SHAPES)
def test_with_amx_a_packed_bfloat16_row_does_not_depend_on_how_many_rows_are_multiplied_with_it(shape):
    weights = weights_for((torch.randn(*shape) * 0.05).to(torch.bfloat16))
    assert_rows_do_not_depend_on_their_company(weights, heavy_tailed_rows(shape[1], torch.bfloat16))


@pytest.mark.skipif(not packed_weights.float16_rows_exact(), reason="no FBGEMM, or its kernels on this CPU are not "
                    "row-exact (AVX2: 1- and 2-row kernels sum in another order; the probe test below covers it)")
@pytest.mark.parametrize("shape", SHAPES)
def test_where_the_probe_says_exact_a_float16_copy_row_does_not_depend_on_how_many_rows_are_multiplied_with_it(
        shape):
    weights = weights_for((torch.randn(*shape) * 0.05).half().float())
    assert isinstance(weights, Fp16Linear)
    assert_rows_do_not_depend_on_their_company(weights, heavy_tailed_rows(shape[1], torch.float32))


@needs_fbgemm
@pytest.mark.parametrize("shape", SHAPES)
def test_the_row_exactness_probe_tells_what_smollm2_shaped_products_do(shape):
    weights = weights_for((torch.randn(*shape) * 0.05).half().float())
    dependent = rows_depend_on_their_company(weights, heavy_tailed_rows(shape[1], torch.float32))
    assert packed_weights.float16_rows_exact() is not dependent


@pytest.fixture(scope="module")
def bf16_model(tmp_path_factory):
    return load_model(save(build_model(tiny_config("llama"), seed=0), tmp_path_factory.mktemp("bf16") / "m"),
                      dtype="bfloat16")


@needs_native_bf16
def test_the_static_runner_uses_packed_bfloat16_weights_and_says_so(bf16_model):
    StaticLlamaRunner(bf16_model.model, 96, max_length=16)
    assert bf16_model.runner_kind == "static, oneDNN-packed bfloat16 weights"


@needs_amx
def test_with_amx_a_bfloat16_verification_forward_scores_each_token_as_one_token_forwards_do(bf16_model):
    runner = StaticLlamaRunner(bf16_model.model, 96, max_length=32)
    runner.prefill(IDS[:4])
    together = runner.forward(IDS[4:9])
    runner.rollback(4)
    one_by_one = torch.cat([runner.forward([token]) for token in IDS[4:9]])
    assert torch.equal(together, one_by_one)


@needs_fbgemm
def test_the_copy_computes_what_the_float32_weight_computes():
    weight, bias = torch.randn(48, 32).half().float(), torch.randn(48)
    hidden = torch.randn(1, 5, 32)
    exact = torch.nn.functional.linear(hidden.double(), weight.double(), bias.double()).float()
    torch.testing.assert_close(linear(hidden, weights_for(weight, bias)), exact, rtol=1e-5, atol=1e-5)


@needs_fbgemm
def test_the_static_runner_uses_copies_for_an_exact_model_and_says_so(exact_model):
    StaticLlamaRunner(exact_model.model, 96, max_length=16)
    caveat = "" if packed_weights.float16_rows_exact() else " (rows not exact here)"
    assert exact_model.runner_kind == "static, float16 weight copies" + caveat


def test_switched_off_no_copy_is_made(monkeypatch):
    monkeypatch.setenv("SPECDEC_PACKED_WEIGHTS", "0")
    for weight in (torch.randn(8, 4).half().float(), torch.randn(8, 4).to(torch.bfloat16)):
        assert weights_for(weight)[0] is weight


@needs_fbgemm
def test_copies_count_as_weights_in_the_memory_report(exact_model):
    StaticLlamaRunner(exact_model.model, 96, max_length=16)
    parameters = sum(p.numel() * 4 for p in exact_model.model.parameters())
    linears = sum(m.weight.numel() for m in exact_model.model.modules() if isinstance(m, torch.nn.Linear))
    assert exact_model.param_bytes == parameters + 2 * linears


@needs_fbgemm
def test_logits_through_copies_match_transformers(exact_model):
    static = StaticLlamaRunner(exact_model.model, 96, max_length=32)
    eager = HFEagerRunner(exact_model.model, 96)
    static.prefill(IDS[:4])
    eager.prefill(IDS[:4])
    torch.testing.assert_close(static.forward(IDS[4:9]), eager.forward(IDS[4:9]), rtol=1e-4, atol=1e-5)


@needs_fbgemm
def test_greedy_output_through_copies_is_the_transformers_output(exact_model):
    ours = generate(exact_model, None, IDS[:5], DecodeSettings(k=1, max_new_tokens=24)).token_ids
    with torch.no_grad():
        theirs = exact_model.model.generate(torch.tensor([IDS[:5]]), max_new_tokens=24, do_sample=False,
                                            min_new_tokens=24)[0, 5:].tolist()
    assert ours == theirs


def tiny_llama_model():
    return float16_valued(build_model(tiny_config("llama"), seed=0))


def test_a_later_runner_reuses_what_the_first_prepared():
    model = tiny_llama_model()
    first, second = StaticLlamaRunner(model, 96, 16), StaticLlamaRunner(model, 96, 16)
    assert second.layers is first.layers and second.head is first.head


def test_a_weight_changed_in_place_is_prepared_again():
    model = tiny_llama_model()
    first = StaticLlamaRunner(model, 96, 16)
    with torch.no_grad():
        model.model.layers[0].mlp.down_proj.weight.mul_(0.5)
    assert StaticLlamaRunner(model, 96, 16).layers is not first.layers


def test_a_replaced_weight_is_prepared_again():
    model = tiny_llama_model()
    first = StaticLlamaRunner(model, 96, 16)
    layer = model.model.layers[1].self_attn.q_proj
    layer.weight = torch.nn.Parameter(layer.weight.detach().clone(), requires_grad=False)
    assert StaticLlamaRunner(model, 96, 16).layers is not first.layers


def test_forgotten_copies_are_prepared_again():
    model = tiny_llama_model()
    first = StaticLlamaRunner(model, 96, 16)
    packed_weights.forget_copies(model)
    assert StaticLlamaRunner(model, 96, 16).layers is not first.layers


@needs_fbgemm
def test_switching_copies_off_prepares_plain_weights_for_the_next_runner(monkeypatch):
    model = tiny_llama_model()
    assert isinstance(StaticLlamaRunner(model, 96, 16).head, Fp16Linear)
    monkeypatch.setenv("SPECDEC_PACKED_WEIGHTS", "0")
    assert StaticLlamaRunner(model, 96, 16).head[0] is model.lm_head.weight


def test_runners_of_one_length_share_the_models_rotary_rows_and_match_the_models_own():
    model = tiny_llama_model()
    first, second = StaticLlamaRunner(model, 96, 16), StaticLlamaRunner(model, 96, 16)
    assert second.cos is first.cos
    cos, sin = model.model.rotary_emb(torch.empty(0), torch.arange(24)[None])
    longer = StaticLlamaRunner(model, 96, 24)
    assert torch.equal(longer.cos, cos) and torch.equal(longer.sin, sin)
