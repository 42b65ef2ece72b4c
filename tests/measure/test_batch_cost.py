"""The cost model with a batch (specdec/measure/batch_cost.py, cost_model.forward_cost's `batch`) against hand-computed
cases."""
from specdec.measure import batch_cost as bc
from specdec.measure import cost_model as cm
from specdec.measure.device_presets import PRESETS, Device

import pytest

ROUND = cm.Network("round", layers=2, hidden=100, heads=1, kv_heads=1, head_dim=100, intermediate=100,
                   head_rows=1000)
NO_DRAFT = cm.DraftShape("prompt lookup", "prompt lookup", None)
MEMORY_ONLY = Device("mem", "1 GB/s, unbounded compute", bandwidth=1e9, peak_flops={"float32": 1e30})
COMPUTE_ONLY = Device("flops", "only compute", bandwidth=1e30, peak_flops={"float32": 1e9})
SMOLLM2 = cm.Network("smollm2-135m-instruct", layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64,
                     intermediate=1536, head_rows=49152)


def test_a_batch_of_one_costs_what_a_single_sequence_does():
    single = cm.forward_cost(ROUND, MEMORY_ONLY, "float32", tokens=5, context=99)
    assert cm.forward_cost(ROUND, MEMORY_ONLY, "float32", tokens=5, context=99, batch=1) == single


def test_a_batch_reads_the_weights_once_and_every_sequences_cache_and_rows():
    one = cm.forward_cost(ROUND, MEMORY_ONLY, "float32", tokens=2, context=99)
    four = cm.forward_cost(ROUND, MEMORY_ONLY, "float32", tokens=2, context=99, batch=4)
    weights = ROUND.params * 4
    assert four.bytes - weights == pytest.approx(4 * (one.bytes - weights))
    assert four.flops == pytest.approx(4 * one.flops)


def test_on_a_bandwidth_bound_device_speculation_keeps_nearly_its_tokens_per_step_at_concurrency_one():
    curve = bc.predict_load(ROUND, NO_DRAFT, MEMORY_ONLY, "float32", k=4, tokens_per_step=2.5, concurrencies=(1,))
    # the verification forward reads the same weights for 4 more rows: a little more cache, activations and logits
    assert 2.0 < curve.points[0].speedup < 2.5


def test_on_a_compute_bound_device_a_step_costs_its_rows_so_speculation_gives_e_over_k_plus_one():
    curve = bc.predict_load(ROUND, NO_DRAFT, COMPUTE_ONLY, "float32", k=4, tokens_per_step=2.5, concurrencies=(1, 8))
    for point in curve.points:
        assert point.verify_bound == "compute"
        assert point.speedup == pytest.approx(2.5 / 5, rel=0.05)  # attention adds a little beyond the 5x rows
    assert curve.crossover == 1 and curve.compute_bound_from == 1


def test_the_speedup_falls_with_concurrency_and_the_crossover_is_where_it_reaches_one():
    h100 = PRESETS["h100"]
    llama8b = cm.Network("8b", layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=14336,
                         head_rows=128256)
    curve = bc.predict_load(llama8b, NO_DRAFT, h100, "bfloat16", k=4, tokens_per_step=2.5, overhead_s=0.0)
    speedups = [p.speedup for p in curve.points]
    assert speedups == sorted(speedups, reverse=True)
    assert curve.points[0].verify_bound == "bandwidth" and curve.points[-1].verify_bound == "compute"
    first_below = next(p.concurrency for p in curve.points if p.speedup <= 1)
    assert curve.crossover == first_below
    assert curve.compute_bound_from <= curve.crossover


def test_a_draft_model_drafts_k_one_row_forwards_for_the_whole_batch():
    draft = cm.DraftShape("draft", "draft model", ROUND)
    point = bc.load_point(SMOLLM2, draft, MEMORY_ONLY, "float32", 3, 2.0, concurrency=8)
    assert point.draft_s == pytest.approx(3 * cm.forward_cost(ROUND, MEMORY_ONLY, "float32", 1, batch=8).time_s)


def test_a_calibrated_overhead_makes_the_single_step_take_the_measured_time():
    device = PRESETS["t4"]
    overhead = bc.calibrated_overhead(SMOLLM2, device, "float16", measured_step_s=0.020)
    curve = bc.predict_load(SMOLLM2, NO_DRAFT, device, "float16", 4, 2.0, concurrencies=(1,), overhead_s=overhead)
    assert curve.points[0].target_step.time_s == pytest.approx(0.020)
    assert curve.overhead_s == pytest.approx(overhead)


def test_the_curve_is_plain_data_with_every_point():
    curve = bc.predict_load(SMOLLM2, NO_DRAFT, PRESETS["a100"], "bfloat16", 4, 2.0, concurrencies=(4, 1, 2, 2))
    data = curve.to_dict()
    assert [p["concurrency"] for p in data["points"]] == [1, 2, 4]
    assert {"speedup", "baseline_tokens_per_s", "verify_bound", "verify_intensity"} <= set(data["points"][0])
    rows = bc.curve_rows(curve)
    assert len(rows) == 3 and rows[0]["device"] == "NVIDIA A100 80GB SXM" and rows[0]["k"] == 4


@pytest.mark.parametrize("concurrency,k,tokens,drafted", [(0, 4, 2.0, None), (1, 0, 1.0, None), (1, 4, 5.5, None),
                                                         (1, 4, 0.5, None), (1, 4, 3.0, 1.5), (1, 4, 2.0, 5)])
def test_impossible_points_are_refused(concurrency, k, tokens, drafted):
    with pytest.raises(ValueError):
        bc.load_point(SMOLLM2, NO_DRAFT, MEMORY_ONLY, "float32", k, tokens, concurrency, drafted_per_step=drafted)


def test_fewer_drafts_per_step_make_a_cheaper_verification():
    full = bc.load_point(SMOLLM2, NO_DRAFT, COMPUTE_ONLY, "float32", 4, 1.5, 8)
    sparse = bc.load_point(SMOLLM2, NO_DRAFT, COMPUTE_ONLY, "float32", 4, 1.5, 8, drafted_per_step=1.0)
    assert sparse.verify.flops == pytest.approx(full.verify.flops * 2 / 5, rel=0.05)
    assert sparse.speedup > full.speedup
