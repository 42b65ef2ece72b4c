"""The lab's CPU kernels (specdec/runners/native/decode_kernels.c) and the runner on them: the same numbers as torch up to
the order of sums, every row the same whatever rows share the call or how many threads compute it, greedy
speculation token-identical to target-only decoding, and a clear reason wherever they cannot run."""
from __future__ import annotations

import copy
import threading

from specdec import DecodeSettings, generate, load_drafter, load_model
from specdec.runners import lab_kernels as lab_kernel_runner
from specdec.runners import native_kernels, packed_weights, tuning
from specdec.runners.lab_kernels import KIND, LabKernelRunner, fits
from specdec.runners.static import StaticLlamaRunner

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.tiny_models import IDS, build_model, drive, perturbed_copy, save, tiny_config

pytestmark = pytest.mark.skipif(not native_kernels.available(), reason=native_kernels.unavailable_reason())
VOCAB = 128


def as_float16_values(model):
    """Every weight rounded to a float16 value, as SmolLM2's are (the kernels read float16 copies)."""
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(param.half().float())
    return model


def kernel_model(arch: str, seed: int = 0):
    config = tiny_config(arch, vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=16)
    return as_float16_values(build_model(config, seed=seed))


@pytest.fixture(scope="module", params=["llama", "qwen2"])  # Qwen2: biases on q, k and v
def model(request):
    return kernel_model(request.param)


def linear_through_kernels(x, weight, bias=None, residual=None, threads=2, library=None):
    out = torch.empty(x.shape[0], weight.shape[0])
    packed = native_kernels.pack(weight)
    (library or native_kernels.library()).sd_linear(x.data_ptr(), x.shape[0], x.shape[1], packed.data_ptr(),
                                       bias.data_ptr() if bias is not None else None, weight.shape[0],
                                       residual.data_ptr() if residual is not None else None, out.data_ptr(), threads)
    return out


def weight_of(rows, columns, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, columns, generator=generator) * 0.05).half().float()


def test_packing_puts_output_row_r_of_group_j_at_column_r():
    group = native_kernels.group()
    weight = weight_of(2 * group, 40)
    packed = native_kernels.pack(weight)
    assert packed.shape == (2, 40, group) and packed.dtype == torch.float16
    assert torch.equal(packed[1, :, 5].float(), weight[group + 5])


def test_a_gated_pair_alternates_gate_and_up_groups():
    group = native_kernels.group()
    gate, up = weight_of(2 * group, 8, seed=1), weight_of(2 * group, 8, seed=2)
    packed = native_kernels.pack_gated(gate, up)
    assert [torch.equal(packed[i].float().T, w[g * group:(g + 1) * group]) for i, (w, g) in
            enumerate([(gate, 0), (up, 0), (gate, 1), (up, 1)])] == [True] * 4


def test_a_product_equals_torchs_up_to_the_order_of_sums():
    weight, bias = weight_of(192, 96), torch.randn(192)
    x, residual = torch.randn(3, 96), torch.randn(3, 192)
    torch.testing.assert_close(linear_through_kernels(x, weight, bias, residual), residual + F.linear(x, weight, bias),
                               rtol=1e-5, atol=1e-5)


ROW_COUNTS = [2, 3, 4, 5, 6, 7, 9, 12, 13, 17]  # across the tile sizes of both builds (6 and 12 rows) and beyond


@pytest.mark.parametrize("rows", ROW_COUNTS)
def test_a_rows_product_does_not_depend_on_the_rows_beside_it(rows):
    weight, x = weight_of(256, 96), torch.randn(rows, 96) * torch.rand(rows, 96).pow(4) * 8
    together = linear_through_kernels(x, weight)
    alone = torch.cat([linear_through_kernels(x[i:i + 1].contiguous(), weight) for i in range(rows)])
    assert torch.equal(together, alone)


@pytest.mark.parametrize("rows", ROW_COUNTS)
def test_the_avx2_build_computes_the_same_products_row_exact(avx2_kernels, rows):
    assert avx2_kernels.sd_lanes() == 8
    weight, bias, x = weight_of(192, 96), torch.randn(192), torch.randn(rows, 96)
    products = linear_through_kernels(x, weight, bias, library=avx2_kernels)
    torch.testing.assert_close(products, F.linear(x, weight, bias), rtol=1e-5, atol=1e-5)
    alone = torch.cat([linear_through_kernels(x[i:i + 1].contiguous(), weight, bias, library=avx2_kernels)
                       for i in range(rows)])
    assert torch.equal(products, alone)


def test_attention_equals_torchs_on_both_builds(avx2_kernels):
    heads, kv_heads, head_dim, start, rows, length = 4, 2, 16, 6, 3, 12
    q = torch.randn(rows, heads * head_dim)
    keys, values = torch.randn(kv_heads, length, head_dim), torch.randn(kv_heads, length, head_dim)
    mask = torch.ones(rows, start + rows, dtype=torch.bool).tril(diagonal=start)
    expected = F.scaled_dot_product_attention(q.view(1, rows, heads, head_dim).transpose(1, 2),
                                              keys[None, :, :start + rows], values[None, :, :start + rows],
                                              attn_mask=mask, scale=0.25, enable_gqa=True)
    expected = expected.transpose(1, 2).reshape(rows, heads * head_dim)
    for library in (native_kernels.library(), avx2_kernels):
        out = torch.empty(rows, heads * head_dim)
        assert library.sd_attention(q.data_ptr(), rows, heads, kv_heads, head_dim, keys.data_ptr(), values.data_ptr(),
                                    length, start, None, 0.25, out.data_ptr()) == 0
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_the_kernels_exp_is_within_two_units_in_the_last_place_on_both_builds(avx2_kernels):
    # softmax's exponents (<= 0) and SiLU's e^-g, down to where float32's exp leaves the normal numbers
    x = torch.cat([torch.linspace(-87.0, 88.0, 400_001), torch.randn(20_000) * 8])
    exact = torch.exp(x.double())
    unit = torch.from_numpy(np.spacing(exact.float().abs().numpy())).double()  # float32's spacing at e^x
    for library in (native_kernels.library(), avx2_kernels):
        out = torch.empty_like(x)
        library.sd_exp(x.data_ptr(), x.numel(), out.data_ptr())
        assert ((out.double() - exact).abs() / unit).max().item() <= 2


def test_a_product_does_not_depend_on_the_thread_count():
    weight, x = weight_of(1024, 96), torch.randn(5, 96)
    assert torch.equal(linear_through_kernels(x, weight, threads=1), linear_through_kernels(x, weight, threads=2))


def test_calls_from_several_python_threads_take_turns():
    weight, inputs = weight_of(2048, 64), [torch.randn(2, 64) for _ in range(4)]
    expected = [linear_through_kernels(x, weight) for x in inputs]
    results = [None] * len(inputs)

    def work(i):
        for _ in range(20):
            results[i] = linear_through_kernels(inputs[i], weight)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    [w.start() for w in workers]
    [w.join() for w in workers]
    assert all(torch.equal(r, e) for r, e in zip(results, expected))


def float64_drive(model):
    """drive()'s logits from the same model in float64: what both runners' float32 sums approximate."""
    exact = copy.deepcopy(model).double()
    with torch.no_grad():
        def logits(ids):
            return exact(torch.tensor([ids])).logits[0].float()
        return logits(IDS[:9])[4:9], logits(IDS[:12])[6:12], logits(IDS[:12] + [5])[-1:]


def largest_error(logits, reference):
    return max((a - b).abs().max().item() for a, b in zip(logits, reference))


def test_the_runners_logits_are_as_close_to_a_float64_forward_as_torchs_runner(model):
    # the two runners order their float32 sums differently, so each is off the float64 forward by ~1e-5 on logits of
    # ~10, either one the closer by turns; a wrong product or a wrong row would be off by far more
    ours, torchs = drive(LabKernelRunner(model, VOCAB, 32)), drive(StaticLlamaRunner(model, VOCAB, 32))
    reference = float64_drive(model)
    assert largest_error(ours, reference) <= 3 * largest_error(torchs, reference)


def test_a_verification_row_equals_a_one_token_forward_bit_for_bit(model):
    runner = LabKernelRunner(model, VOCAB, 32)
    runner.prefill(IDS[:4])
    one_at_a_time = torch.cat([runner.forward([token]) for token in IDS[4:10]])
    runner.rollback(4)
    assert torch.equal(runner.forward(IDS[4:10]), one_at_a_time)


def test_a_long_forward_goes_through_torchs_products_into_the_same_cache(model, monkeypatch):
    monkeypatch.setattr(lab_kernel_runner, "LONG_ROWS", 4)  # IDS[:6] is then long
    ours, torchs = LabKernelRunner(model, VOCAB, 32), StaticLlamaRunner(model, VOCAB, 32)
    torch.testing.assert_close(ours.prefill(IDS[:6]), torchs.prefill(IDS[:6]), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ours.forward(IDS[6:9]), torchs.forward(IDS[6:9]), rtol=1e-4, atol=1e-5)


def test_long_forwards_make_no_second_copy_of_the_weights(monkeypatch):
    monkeypatch.setattr(lab_kernel_runner, "LONG_ROWS", 4)
    model = kernel_model("llama", seed=5)
    LabKernelRunner(model, VOCAB, 32).prefill(IDS[:8])
    assert packed_weights.copy_bytes(model) == lab_kernel_runner.packed_model(model).nbytes


@pytest.fixture(params=["native", "avx2"])
def build(request, avx2_kernels, monkeypatch):
    """Runners made in a test with this fixture run on the machine's own build or on the AVX2 one."""
    if request.param == "avx2":
        monkeypatch.setitem(native_kernels._STATE, "library", avx2_kernels)
    return request.param


def two_threads(monkeypatch):
    monkeypatch.setenv("SPECDEC_STEP_THREADS", "2")  # the model's forwards, the kernels' products and attention


@pytest.mark.parametrize("threads", [1, 2])
def test_every_verification_row_equals_a_one_token_forward_on_either_build_and_thread_count(model, build, threads,
                                                                                            monkeypatch):
    monkeypatch.setenv("SPECDEC_STEP_THREADS", str(threads))
    runner = LabKernelRunner(model, VOCAB, 40)
    runner.prefill(IDS[:3])
    tokens = (IDS * 3)[3:20]  # 17 rows: more than one tile of rows on both builds
    one_at_a_time = torch.cat([runner.forward([token]) for token in tokens])
    runner.rollback(3)
    assert torch.equal(runner.forward(tokens), one_at_a_time)


def test_a_forward_does_not_depend_on_the_thread_count(model, monkeypatch):
    outputs = []
    for count in ("1", "2"):
        monkeypatch.setenv("SPECDEC_STEP_THREADS", count)
        runner = LabKernelRunner(model, VOCAB, 32)
        runner.prefill(IDS[:4])
        outputs.append(runner.forward(IDS[4:10]))
    assert torch.equal(*outputs)


def test_a_tree_node_scores_as_its_chain_would_on_two_threads(model, monkeypatch):
    two_threads(monkeypatch)
    runner = LabKernelRunner(model, VOCAB, 32)
    runner.prefill(IDS[:4])
    chain = runner.forward([7, 9, 11])
    runner.rollback(4)
    tree = runner.forward_tree(7, [3, 9, 11], [-1, -1, 1])
    assert torch.equal(tree[[0, 2, 3]], chain)


def test_a_tree_node_scores_as_its_chain_would(model):
    runner = LabKernelRunner(model, VOCAB, 32)
    runner.prefill(IDS[:4])
    chain = runner.forward([7, 9, 11])  # root 7, then 9, then 11
    runner.rollback(4)
    tree = runner.forward_tree(7, [3, 9, 11], [-1, -1, 1])  # 3 and 9 children of the root, 11 a child of 9
    assert torch.equal(tree[[0, 2, 3]], chain)


def test_the_runner_keeps_the_hidden_states_drafters_read(model):
    ours, torchs = LabKernelRunner(model, VOCAB, 32, keep_hidden=(0, 1, 2)), StaticLlamaRunner(model, VOCAB, 32, keep_hidden=(0, 1, 2))
    ours.prefill(IDS[:6]), torchs.prefill(IDS[:6])
    torch.testing.assert_close(ours.hidden, torchs.hidden, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    target = kernel_model("llama")
    draft = as_float16_values(perturbed_copy(target, 0.3, seed=1))
    folder = tmp_path_factory.mktemp("lab-kernels")
    target_loaded = load_model(save(target, folder / "target"), dtype="float32")
    target_loaded.kernels = "lab"
    return target_loaded, load_drafter(save(draft, folder / "draft"), target_loaded)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_greedy_speculation_on_the_lab_kernels_reproduces_target_only_decoding(pair, k):
    target, drafter = pair
    settings = DecodeSettings(max_new_tokens=24, k=k, temperature=0.0)
    assert target.runner_kind == f"static, {KIND}"
    assert generate(target, drafter, IDS[:5], settings).token_ids == generate(target, None, IDS[:5], settings).token_ids


def test_the_tuner_measures_the_lab_kernels_where_they_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    path = load_model(save(kernel_model("llama", seed=3), tmp_path / "m")).tuned
    lab = [c for c in path.candidates if c.kernels == "lab"]
    assert [c.threads for c in lab] == tuning.thread_candidates()
    assert all(c.rows_exact and c.runner == f"static, {KIND}" for c in lab)


def test_weights_that_are_not_float16_values_are_refused_with_a_reason():
    model = kernel_model("llama")
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight[0, 0] += 1e-6
    assert "float16 values" in fits(model)


def test_turned_off_the_kernels_say_so(monkeypatch):
    monkeypatch.setenv("SPECDEC_LAB_KERNELS", "0")
    assert not native_kernels.available() and "SPECDEC_LAB_KERNELS=0" in native_kernels.unavailable_reason()


def test_a_failed_build_is_a_reason_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    library, reason = native_kernels._load()
    assert library is None and reason.startswith("lab kernels: the build failed")


def test_the_packed_weights_count_in_the_models_memory():
    model = kernel_model("llama", seed=4)
    LabKernelRunner(model, VOCAB, 32)
    layer_matrices = sum(p.numel() for p in model.model.layers.parameters() if p.dim() == 2)
    assert packed_weights.copy_bytes(model) == 2 * (layer_matrices + model.lm_head.weight.numel())
    assert packed_weights.copy_kind(model) == KIND


def test_the_avx2_path_can_be_asked_for_on_any_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    monkeypatch.setenv("SPECDEC_LAB_KERNELS_AVX2", "1")
    library, reason = native_kernels._load()
    assert reason == "" and library.sd_lanes() == 8
