"""Steps table and full-trace export."""
import json

from specdec.engine.events import DecodeSettings
from specdec.ui.views import tables

import pandas as pd

from tests.ui_fakes import FakeEngine, FakeModel, mixed_run


def test_steps_table_has_one_row_per_step():
    df = tables.steps_dataframe(mixed_run())
    assert list(df["step"]) == [0, 1, 2] and list(df["accepted"]) == [2, 1, 1]
    assert list(df["final kind"]) == ["bonus", "resampled", "resampled"]


def test_trace_has_a_row_per_proposed_or_target_token_with_its_fate():
    df = tables.trace_dataframe(mixed_run())
    assert list(df[df.step == 1]["fate"]) == ["accepted", "rejected", "unchecked", "resampled"]


def test_export_writes_csv_and_json_of_the_full_trace(tmp_path):
    result = FakeEngine().generate(FakeModel("t"), FakeModel("d"), [1], DecodeSettings(k=4, max_new_tokens=12))
    csv_path, json_path = tables.export_trace(result, folder=str(tmp_path))
    assert len(pd.read_csv(csv_path)) == len(tables.trace_dataframe(result.events))
    saved = json.loads(open(json_path).read())
    assert len(saved["steps"]) == len(result.events) and saved["metrics"]["new_tokens"] == 12


def test_an_empty_table_shows_its_headers_before_any_run():
    assert list(tables.empty_table(tables.STEP_COLUMNS).columns) == tables.STEP_COLUMNS


def test_the_json_export_carries_the_speedup_interval_baseline_and_definitions(tmp_path):
    from specdec.measure.speedup import Pair, Timing, estimate
    engine = FakeEngine()
    result = engine.generate(FakeModel("t"), FakeModel("d"), [1], DecodeSettings(k=4, max_new_tokens=12))
    baseline = engine.generate(FakeModel("t"), None, [1], DecodeSettings(k=4, max_new_tokens=12))
    est = estimate([Pair(Timing(12, 1.0), Timing(12, 1.5), True)] * 6, state="done")
    _, json_path = tables.export_trace(result, folder=str(tmp_path), measurement=est, baseline=baseline)
    saved = json.loads(open(json_path).read())
    assert saved["speedup"]["ratio"] == 1.5 and saved["speedup"]["low"] == 1.5 and saved["speedup"]["repeats"] == 6
    assert saved["baseline"]["new_tokens"] == 12 and {"acceptance_rate", "alpha"} <= set(saved["definitions"])
