"""Float16 weight copies (specdec/fp16_weights.py): made only where exact, same maths, counted as weights."""
import pytest
import torch

from specdec import DecodeSettings, generate, load_model
from specdec import fp16_weights
from specdec.backend import HFEagerRunner
from specdec.fp16_weights import Fp16Linear, exact_in_float16, linear, weights_for
from specdec.static_runner import StaticLlamaRunner
from tiny_models import build_model, save, tiny_config

IDS = [4, 8, 15, 16, 23, 42, 7, 1, 3, 9, 11, 2]
needs_fbgemm = pytest.mark.skipif(not fp16_weights.enabled(), reason="this torch has no FBGEMM float16 GEMM")


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


def test_bfloat16_weights_are_left_to_torch():
    weight = torch.randn(8, 4).to(torch.bfloat16)
    assert weights_for(weight)[0] is weight


@needs_fbgemm
def test_the_copy_computes_what_the_float32_weight_computes():
    weight, bias = torch.randn(48, 32).half().float(), torch.randn(48)
    hidden = torch.randn(1, 5, 32)
    exact = torch.nn.functional.linear(hidden.double(), weight.double(), bias.double()).float()
    torch.testing.assert_close(linear(hidden, weights_for(weight, bias)), exact, rtol=1e-5, atol=1e-5)


@needs_fbgemm
def test_the_static_runner_uses_copies_for_an_exact_model_and_says_so(exact_model):
    StaticLlamaRunner(exact_model.model, 96, max_length=16)
    assert exact_model.runner_kind == "static, float16 weight copies"


def test_switched_off_no_copy_is_made(monkeypatch):
    monkeypatch.setenv("SPECDEC_FP16_WEIGHTS", "0")
    weight = torch.randn(8, 4).half().float()
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
