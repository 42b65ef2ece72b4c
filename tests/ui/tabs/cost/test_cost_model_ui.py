"""The "Why this speedup?" tab's callbacks, without a server (a scripted engine, a fixed device)."""
from dataclasses import replace

from specdec.measure.device_presets import THIS_MACHINE, Device
from specdec.ui.session import Session
from specdec.ui.tabs.cost import callbacks as cost_tab
from specdec.ui.tabs.generate.callbacks import Lab

import pytest

from tests.ui_fakes import FakeEngine, split_request

HERE = Device(THIS_MACHINE, "this test machine", bandwidth=10e9, peak_flops={"float32": 50e9},
              forward_overhead_s=1e-4, layer_overhead_s=1e-4, source="fixed for the test", measured=True)
VIEW = dict(target="lab-target", draft="lab-draft-small", target_custom="", draft_custom="", k=4, device_key="h100",
            dtype="auto", alpha=0.7)
MEASURE = dict(prompt="def f(x):", clean_whitespace=False, target="lab-target", draft="lab-draft-small",
               target_custom="", draft_custom="", k=2, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=16,
               seed=0, chat=False, device_key=THIS_MACHINE, dtype="auto", k_values="1-3")


def measure(session=None, **changes):
    lab = Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0)
    request, own = split_request({**MEASURE, **changes})
    return list(cost_tab.measure(lab, session or Session(), request, **own, progress=lambda *a, **k: None,
                                 machine=lambda: HERE))


def test_a_preset_shows_the_prediction_with_each_forward_bound_and_the_key_figures():
    view = cost_tab.predict_view(**VIEW)
    assert "NVIDIA H100 SXM" in view["summary"] and "bandwidth-bound" in view["summary"]
    assert "At K=4: predicted c =" in view["summary"] and "Not measured on this machine" in view["summary"]
    assert list(view["table"]["K"]) == list(range(1, 9)) and view["table"]["c measured"].isna().all()


def test_the_roofline_places_decode_verification_and_prefill_of_target_and_draft():
    names = [t.name for t in cost_tab.predict_view(**VIEW)["roofline"].data if t.name]
    for who in ("target", "draft"):
        assert any(n.startswith(f"{who}: decode, 1 token") for n in names)
        assert any(n.startswith(f"{who}:") and "prefill" in n for n in names)
    assert any("verify, K+1 = 5 tokens" in n for n in names) and names[0].startswith("roof")


def test_the_roofline_shows_this_machines_measured_row_curve_and_a_preset_has_none():
    curved = replace(HERE, row_curves={"float32": ((1, 1e-10), (5, 2e-10))})
    view = cost_tab.predict_view(**{**VIEW, "device_key": THIS_MACHINE}, machine=lambda: curved)
    [trace] = [t for t in view["roofline"].data if (t.name or "").startswith("measured linear layers")]
    assert list(trace.x) == [0.5, 2.5] and list(trace.y) == pytest.approx([5e9, 12.5e9])  # 2M/4 FLOP/B over s
    assert "Linear layers measured over M rows (M = 1: 10.0 GB/s, M = 5: 5.0 GB/s" in view["summary"]
    preset_traces = cost_tab.predict_view(**VIEW)["roofline"].data
    assert not any((t.name or "").startswith("measured linear") for t in preset_traces)


def test_prompt_lookup_has_no_draft_points_and_predicts_c_zero():
    view = cost_tab.predict_view(**{**VIEW, "draft": "prompt-lookup"})
    assert not any((t.name or "").startswith("draft") for t in view["roofline"].data)
    assert (view["table"]["c predicted"] == 0).all() and "costs the model nothing" in view["summary"]


def test_this_machine_before_any_measurement_asks_for_one():
    view = cost_tab.predict_view(**{**VIEW, "device_key": THIS_MACHINE}, machine=lambda: None)
    assert "press “Measure on this machine”" in view["summary"] and "roofline" not in view


def test_a_bad_name_or_dtype_is_one_visible_line_in_the_predictions_place():
    view = cost_tab.predict_view(**{**VIEW, "dtype": "int3"})
    assert "Unknown dtype" in view["summary"] and view["error"] == ""
    assert "has no bfloat16 figure" in cost_tab.predict_view(**{**VIEW, "device_key": "t4", "dtype": "bfloat16"})["summary"]
    assert "No prediction for lab-target + nope:" in cost_tab.predict_view(**{**VIEW, "draft": "nope"})["summary"]


def test_a_dtype_this_machine_has_not_measured_is_left_to_the_measure_button():
    view = cost_tab.predict_view(**{**VIEW, "device_key": THIS_MACHINE, "dtype": "bfloat16"}, machine=lambda: HERE)
    assert "no bfloat16 figure" in view["summary"] and "press Measure on this machine" in view["summary"]


def test_measuring_reports_progress_then_shows_measured_c_v_and_speedup_beside_the_prediction():
    updates = measure()
    assert any("Measuring this machine" in u.get("status", "") for u in updates)
    final = updates[-1]
    table = final["table"]
    assert list(table["K"][:3]) == [1, 2, 3] and table["c measured"][:3].notna().all()
    assert table["v(K) measured"][:3].notna().all() and table["speedup measured"][:3].notna().all()
    assert final["state"].rows and [r.k for r in final["state"].rows] == [1, 2, 3]
    assert final["alpha"] == pytest.approx(final["state"].rows[0].alpha)
    assert final["state"].step_s == pytest.approx(0.004)  # the fake engine's target-only step
    assert "A target-only step: predicted" in final["summary"]
    assert "Measured on this machine: c =" in final["summary"] and "Measured 3 of 3 K values." in final["status"]
    assert any(t.name == "measured on this machine" for t in final["speedup"].data)


def test_the_measurement_is_shown_again_when_the_prediction_is_redrawn_for_the_same_pair():
    measured = measure()[-1]["state"]
    view = cost_tab.predict_view(**{**VIEW, "device_key": THIS_MACHINE}, measured=measured, machine=lambda: HERE)
    assert view["table"]["c measured"][:3].notna().all() and "this test machine" in view["summary"]
    other = cost_tab.predict_view(**{**VIEW, "draft": "prompt-lookup"}, measured=measured)
    assert other["table"]["c measured"].isna().all()


def test_measurements_are_reused_from_the_session_like_the_sweeps():
    session = Session()
    measure(session)
    runs = len(session.measurements)
    measure(session)
    assert len(session.measurements) == runs == 3


def test_bad_k_values_are_refused_before_anything_runs():
    updates = measure(k_values="0-99")
    assert len(updates) == 1 and "K values must lie in [1, 16]" in updates[0]["error"]


def test_stop_ends_the_measurement_with_what_was_measured():
    session = Session()
    lab = Lab(FakeEngine(), token_interval_s=0.0, settle_s=0.0)
    updates = []
    request, own = split_request(MEASURE)
    for update in cost_tab.measure(lab, session, request, **own, progress=lambda *a, **k: None, machine=lambda: HERE):
        updates.append(update)
        if "Measuring point 2" in update.get("status", ""):
            session.stop_requested = True
    assert "(stopped)" in updates[-1]["status"] and len(updates[-1]["state"].rows) == 1
