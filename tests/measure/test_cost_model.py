"""The cost model (specdec/measure/cost_model.py, specdec/measure/device_presets.py) against hand-computed cases."""
from specdec.drafters.base import DrafterSpec
from specdec.drafters.eagle import EagleDrafter
from specdec.engine.theory import theoretical_speedup
from specdec.errors import ModelLoadError
from specdec.measure import cost_model as cm
from specdec.measure.device_presets import (
    PREFILL_ROWS,
    PRESETS,
    ROW_COUNTS,
    THIS_MACHINE,
    Device,
    device_choices,
    interpolate_rows,
    measure_this_machine,
    preset,
)
from specdec.models.loading import load_model

import pytest

# 2 layers, every matmul 100 x 100 (q, k, v, o, gate, up, down: 7 x 10,000 = 70,000 weights per layer), one
# head of 1,000 rows: 2 x 70,000 + 1,000 x 100 = 240,000 matmul weights.
ROUND = cm.Network("round", layers=2, hidden=100, heads=1, kv_heads=1, head_dim=100, intermediate=100,
                   head_rows=1000)
SLOW_MEMORY = Device("slow", "1 GB/s, 10 GFLOP/s", bandwidth=1e9, peak_flops={"float32": 1e10})
OVERHEAD_ONLY = Device("ovh", "only overhead", bandwidth=1e30, peak_flops={"float32": 1e30}, forward_overhead_s=1e-3)
COMPUTE_ONLY = Device("flops", "only compute", bandwidth=1e30, peak_flops={"float32": 1e9})
# A fake row curve: 1 ns per weight byte at 1 row, 3 at 4 rows, 4 at 16 rows.
CURVE = ((1, 1e-9), (4, 3e-9), (16, 4e-9))
CURVED = Device("curved", "1 GB/s, 10 GFLOP/s, a row curve", bandwidth=1e9, peak_flops={"float32": 1e10},
                row_curves={"float32": CURVE}, measured=True)
SMOLLM2 = cm.Network("smollm2-135m-instruct", layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64,
                     intermediate=1536, head_rows=49152)


def test_matmul_weights_are_layers_times_their_seven_matmuls_plus_the_head():
    assert ROUND.params == 240_000
    # SmolLM2-135M: 30 x (576·576·2 + 576·192·2 + 576·1536·3) + 49152·576, its 134.5M minus the norms
    assert SMOLLM2.params == 134_479_872


def test_a_one_token_decode_is_bandwidth_bound_and_costs_its_bytes_over_the_bandwidth():
    cost = cm.forward_cost(ROUND, SLOW_MEMORY, "float32", tokens=1, context=99)
    weights = 240_000 * 4
    kv = 2 * 2 * 100 * (99 + 1) * 4  # layers x (keys, values) x kv width x positions x 4 bytes
    activations = 1 * 2 * 7 * 200 * 4  # each matmul reads 100 and writes 100 values, per layer
    logits = 1000 * 4 * 4  # one row of 1,000 float32 logits, 4 passes
    assert cost.bytes == weights + kv + activations + logits == 1_147_200
    # 2 x 240,000 matmul FLOPs + attention: 2 layers x 4 x 100 x 100 attended positions
    assert cost.flops == 480_000 + 80_000
    assert cost.bound == "bandwidth" and cost.time_s == pytest.approx(1_147_200 / 1e9)
    assert cost.intensity == pytest.approx(560_000 / 1_147_200)


def test_a_long_prefill_is_compute_bound_and_costs_its_flops_over_the_peak():
    cost = cm.forward_cost(ROUND, SLOW_MEMORY, "float32", tokens=1000, context=0, logit_rows=1)
    matmuls = 2 * (1000 * 140_000 + 1 * 100_000)  # the head only for the last position
    attention = 2 * 4 * 100 * (1000 * 1001 // 2)  # causal: token i sees i + 1 positions
    assert cost.flops == matmuls + attention == 680_600_000
    assert cost.bytes == 960_000 + 2 * 2 * 100 * 1000 * 4 + 1000 * 2 * 7 * 200 * 4 + 1000 * 4 * 4
    assert cost.bound == "compute" and cost.time_s == pytest.approx(0.06806)


def test_the_overhead_is_per_forward_plus_per_layer_and_adds_to_the_roofline_time():
    device = Device("d", "d", bandwidth=1e9, peak_flops={"float32": 1e10}, forward_overhead_s=1e-3,
                    layer_overhead_s=0.5e-3)
    cost = cm.forward_cost(ROUND, device, "float32", tokens=1, context=99)
    assert cost.overhead_s == pytest.approx(2e-3) and cost.time_s == pytest.approx(1.1472e-3 + 2e-3)


def test_the_row_curve_is_linear_in_log_rows_between_measured_points():
    assert interpolate_rows(CURVE, 1) == 1e-9 and interpolate_rows(CURVE, 4) == pytest.approx(3e-9)
    assert interpolate_rows(CURVE, 2) == pytest.approx(2e-9)  # log 2 is halfway from log 1 to log 4
    assert interpolate_rows(CURVE, 8) == pytest.approx(3.5e-9)  # halfway from log 4 to log 16


def test_beyond_the_last_measured_rows_the_time_per_weight_byte_grows_in_proportion_to_rows():
    assert interpolate_rows(CURVE, 32) == pytest.approx(8e-9) and interpolate_rows(CURVE, 160) == pytest.approx(40e-9)


def test_a_device_without_a_curve_for_a_dtype_leaves_it_to_the_roofline():
    assert CURVED.weight_byte_s("bfloat16", 2) is None and SLOW_MEMORY.weight_byte_s("float32", 2) is None


def test_with_a_row_curve_the_weight_products_cost_their_bytes_at_the_curve_plus_the_rest_on_the_roofline():
    cost = cm.forward_cost(ROUND, CURVED, "float32", tokens=2, context=99)
    products = (2 * 70_000 + 100_000) * 4 * 2e-9  # layers and head at 2 rows: 2 ns per weight byte
    kv_and_logits = 2 * 2 * 100 * 101 * 4 + 2 * 1000 * 4 * 4  # attention: 160,800 FLOPs, 16 µs, below this
    assert cost.time_s == pytest.approx(products + kv_and_logits / 1e9) == pytest.approx(2.1136e-3)
    assert cost.memory_s == pytest.approx(cost.bytes / 1e9)  # the roofline terms are still reported


def test_with_a_row_curve_a_prefill_times_the_head_at_its_one_logit_row():
    cost = cm.forward_cost(ROUND, CURVED, "float32", tokens=32, context=0, logit_rows=1)
    layers, head = 2 * 70_000 * 4 * 8e-9, 100_000 * 4 * 1e-9  # 32 rows: 2 x 16 rows' 4 ns; the head at 1 row
    kv_and_logits = 2 * 2 * 100 * 32 * 4 + 1000 * 4 * 4
    assert cost.time_s == pytest.approx(layers + head + kv_and_logits / 1e9) == pytest.approx(4.9472e-3)


def test_half_precision_halves_every_byte_but_the_float32_logits():
    full, half = (cm.forward_cost(SMOLLM2, PRESETS["h100"], dtype, 1, 0) for dtype in ("float32", "bfloat16"))
    logits = 49152 * 4 * 4
    assert half.bytes - logits == (full.bytes - logits) / 2


def test_v_is_one_when_the_overhead_dominates_and_k_plus_one_when_compute_does():
    for k in (1, 4, 8):
        assert cm.predict(ROUND, cm.DraftShape("pl", "prompt lookup", None), OVERHEAD_ONLY, "float32", k).at(k)[1] == 1
    no_attention = cm.Network("mlp", 0, 100, 1, 1, 100, 100, head_rows=1000, extra_params=50_000)
    pred = cm.predict(no_attention, cm.DraftShape("pl", "prompt lookup", None), COMPUTE_ONLY, "float32", 4)
    assert [pytest.approx(v) for v in pred.v] == [k + 1 for k in pred.ks]


def test_c_is_zero_for_prompt_lookup_one_for_the_target_itself_and_falls_as_1_over_k_for_medusa():
    lookup, itself = cm.DraftShape("pl", "prompt lookup", None), cm.DraftShape("self", "draft model", ROUND)
    medusa = cm.DraftShape("m", "medusa", cm.Network("m", 0, 100, 1, 1, 100, 100, 500, 40_000), one_call=True)
    for shape, expected in ((lookup, lambda k: 0.0), (itself, lambda k: 1.0), (medusa, lambda k: 1 / k)):
        pred = cm.predict(ROUND, shape, OVERHEAD_ONLY, "float32", 4)
        assert list(pred.c) == [pytest.approx(expected(k)) for k in pred.ks]


def test_predicted_speedups_are_theorys_two_forms_at_the_predicted_c_and_v():
    pred = cm.predict(ROUND, cm.DraftShape("self", "draft model", ROUND), SLOW_MEMORY, "float32", 3)
    textbook, form = pred.speedups(0.8)
    assert textbook[2] == theoretical_speedup(0.8, 3, pred.c[2]) and form[2] == theoretical_speedup(0.8, 3, pred.c[2],
                                                                                                    pred.v[2])
    # overhead-only device, the target as its own draft: c = v = 1, so E / (K + 1): at α = 0.5, K = 1, 1.5 / 2
    same = cm.predict(ROUND, cm.DraftShape("self", "draft model", ROUND), OVERHEAD_ONLY, "float32", 1)
    assert same.speedups(0.5)[1][0] == pytest.approx(0.75)


def test_the_chosen_k_is_always_among_the_predicted_ones():
    pred = cm.predict(ROUND, cm.DraftShape("pl", "prompt lookup", None), SLOW_MEMORY, "float32", 12, ks=(1, 2))
    assert pred.ks == (1, 2, 12) and pred.verify.tokens == 13


def test_a_comparison_holds_both_figures_and_the_relative_error_per_measured_k():
    class Row:
        k, c, v, alpha, speedup, speedup_low, speedup_high = 2, 0.5, 1.25, 0.5, 1.1, 1.0, 1.2

    pred = cm.predict(ROUND, cm.DraftShape("self", "draft model", ROUND), OVERHEAD_ONLY, "float32", 2)
    [row] = cm.compare(pred, [Row()])
    assert (row.c_predicted, row.v_predicted) == (pytest.approx(1.0), pytest.approx(1.0))
    assert row.c_error == pytest.approx(1.0) and row.v_error == pytest.approx(-0.2)
    assert row.speedup_predicted == pytest.approx(theoretical_speedup(0.5, 2, 1.0, 1.0))


def test_a_drafter_predicted_to_cost_nothing_has_no_relative_c_error():
    class Row:
        k, c, v, alpha, speedup, speedup_low, speedup_high = 2, 0.002, 1.0, 0.5, 1.1, None, None

    pred = cm.predict(ROUND, cm.DraftShape("pl", "prompt lookup", None), OVERHEAD_ONLY, "float32", 2)
    [row] = cm.compare(pred, [Row()])
    assert row.c_predicted == 0 and row.c_error is None and row.v_error == pytest.approx(0.0)


# --- presets and this machine -------------------------------------------------------------------------------

def test_presets_carry_datasheet_bandwidth_and_dense_peaks():
    assert PRESETS["h100"].bandwidth == 3.35e12 and PRESETS["h100"].peak("bfloat16") == 989e12
    assert PRESETS["h200"].bandwidth == 4.8e12 and PRESETS["a100"].peak("float16") == 312e12
    assert PRESETS["t4"].peak("float32") == 8.1e12 and device_choices()[0][1] == THIS_MACHINE


def test_a_dtype_a_device_lacks_is_refused_with_the_ones_it_has():
    with pytest.raises(ValueError, match="float16 or float32"):
        preset("t4").peak("bfloat16")


def test_on_every_gpu_preset_decode_is_bandwidth_bound_and_verifying_5_tokens_costs_about_one_step():
    for device in PRESETS.values():
        dtype = "float16" if device.key == "t4" else "bfloat16"
        pred = cm.predict(SMOLLM2, cm.DraftShape("pl", "prompt lookup", None), device, dtype, 4)
        assert pred.decode.bound == "bandwidth" and pred.verify.bound == "bandwidth"
        assert 1.0 < pred.at(4)[1] < 1.05


def test_a_long_prefill_is_compute_bound_on_an_h100():
    assert cm.forward_cost(SMOLLM2, PRESETS["h100"], "bfloat16", 4096, 0, logit_rows=1).bound == "compute"


def test_an_unknown_preset_is_refused_in_one_line():
    with pytest.raises(ValueError, match="Unknown device 'tpu'"):
        preset("tpu")


def test_this_machine_is_measured_once_per_process_with_positive_figures():
    first = measure_this_machine()
    assert first is measure_this_machine()
    assert first.bandwidth > 0 and first.peak("float32") > 0 and first.measured
    assert first.forward_overhead_s >= 0 and first.layer_overhead_s >= 0


def test_this_machine_measures_a_row_curve_at_each_row_count():
    curve = measure_this_machine().row_curves["float32"]
    assert [rows for rows, _ in curve] == list(ROW_COUNTS + PREFILL_ROWS) and all(s > 0 for _, s in curve)


# --- shapes from configs and the zoo -------------------------------------------------------------------------

def test_a_config_gives_the_same_matmul_weights_as_the_model_holds():
    model = load_model("lab-target", device="cpu", dtype="float32").model
    matrices = sum(p.numel() for name, p in model.named_parameters() if p.dim() == 2 and "embed" not in name)
    tied = model.config.tie_word_embeddings
    head = model.get_output_embeddings().weight.numel() if tied else 0
    assert cm.target_network("lab-target").params == matrices + head


def test_prompt_lookup_has_no_network_and_a_draft_model_its_own_config():
    target = cm.target_network("lab-target")
    assert cm.draft_shape("prompt-lookup", target).network is None
    assert cm.draft_shape("lab-draft-small", target).network.layers == cm.target_network("lab-draft-small").layers


def test_the_zoo_drafters_cost_what_each_runs_per_drafted_token():
    shapes = {name: cm.draft_shape(f"smollm2-135m-{name}", SMOLLM2) for name in ("draft", "early-exit", "medusa",
                                                                                 "eagle")}
    assert shapes["draft"].network.layers == 2 and shapes["draft"].network.head_rows == 12288
    assert shapes["early-exit"].network.layers == 6 + 1 and shapes["early-exit"].network.head_rows == 12288
    medusa = shapes["medusa"]
    assert medusa.one_call and medusa.network.extra_params == 4 * (576 * 576 + 576)
    assert medusa.network.layers == 0 and medusa.network.head_rows == 12288
    assert shapes["eagle"].network.layers == 1 and shapes["eagle"].network.extra_params == 2 * 576 * 576


@pytest.mark.parametrize("name", ["smollm2-135m-eagle-tree", "smollm2-135m-eagle-tree-60"])
def test_a_tree_draft_gets_no_cost_model_and_a_message_naming_the_chain(name):
    from specdec.drafters.registry import registered

    if registered(name) is None:
        pytest.skip("the EAGLE head's weights are not in assets/drafters/")
    with pytest.raises(ValueError, match="choose smollm2-135m-eagle"):
        cm.draft_shape(name, SMOLLM2)


def eagle_spec(name: str) -> DrafterSpec:
    return DrafterSpec(name=name, drafter=EagleDrafter, description="", build=lambda target, load_model=None: None)


def test_an_eagle_head_of_two_layers_costs_two_layers_per_drafted_token():
    meta = {"data": {"draft_vocab": 12288}, "layers": 2}
    shape = cm.shipped_shape(eagle_spec("two-layer-eagle"), meta, SMOLLM2)
    assert shape.network.layers == 2 and shape.network.head_rows == 12288


def test_an_eagle3_head_costs_one_layer_of_its_own_mlp_width_per_drafted_token():
    meta = {"data": {"draft_vocab": 12288}, "layers": 1, "feature_layers": [2, 15, 27], "intermediate_size": 640}
    shape = cm.shipped_shape(eagle_spec("eagle3"), meta, SMOLLM2)
    assert shape.network.layers == 1 and shape.network.intermediate == 640 and shape.network.head_rows == 12288


def test_auto_dtype_is_bfloat16_on_gpus_float16_on_the_t4_and_as_loaded_here():
    assert cm.choose_dtype("auto", preset("h100"), "lab-target") == "bfloat16"
    assert cm.choose_dtype("auto", preset("t4"), "lab-target") == "float16"
    here = Device(THIS_MACHINE, "here", 1e9, {"float32": 1e9})
    assert cm.choose_dtype("auto", here, "lab-target") == "float32"  # 5.9M parameters: float32 everywhere
    with pytest.raises(ValueError, match="Unknown dtype"):
        cm.choose_dtype("int3", here, "lab-target")


def test_a_model_whose_config_is_not_on_this_machine_gets_a_one_line_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="not available on this machine"):
        cm.target_network("nobody-here/no-such-model")
