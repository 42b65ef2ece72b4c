"""specdec.measure.speedup: paired, interleaved, repeated timing; the median ratio and its 95% interval."""
from specdec import DecodeSettings, generate, load_model
from specdec.measure.intervals import median_interval, median_interval_ranks, pairs_for_interval
from specdec.measure.speedup import (
    Measurement,
    Pair,
    Policy,
    Timing,
    config_key,
    engine_contestants,
    estimate,
    measure,
    measure_speedup,
    median,
)

import pytest

from tests.tiny_models import build_model, save, tiny_config
from tests.ui_fakes import FakeEngine, FakeModel


def pair(ratio: float, tokens: int = 10) -> Pair:
    return Pair(Timing(tokens, 1.0 / ratio), Timing(tokens, 1.0), lead_first=True)


class Scripted:
    """Contestants whose lead is `ratios[i]` times faster in pair i; records the order of runs."""

    def __init__(self, ratios, tokens: int = 12):
        self.ratios, self.tokens, self.calls, self.follow_counts = list(ratios), tokens, [], []

    def lead(self) -> Timing:
        self.calls.append("lead")
        return Timing(self.tokens, 1.0 / self.ratios[len([c for c in self.calls if c == "lead"]) - 1])

    def follow(self, n: int) -> Timing:
        self.calls.append("follow")
        self.follow_counts.append(n)
        return Timing(n, 1.0)


class Clock:
    def __init__(self, step: float = 0.0):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def run(scripted, policy, **kwargs):
    return list(measure(scripted.lead, scripted.follow, policy, clock=kwargs.pop("clock", Clock()), **kwargs))


# --- statistics ---------------------------------------------------------------------------------------------

def test_the_median_of_an_even_count_is_the_mean_of_the_middle_two():
    assert median([4, 1, 3, 2]) == 2.5 and median([]) is None


def test_a_95_percent_interval_for_the_median_needs_six_values():
    assert pairs_for_interval(0.95) == 6
    assert median_interval_ranks(5) is None and median_interval_ranks(6) == (1, 6)


def test_the_interval_uses_the_narrowest_ranks_that_still_cover_95_percent():
    assert median_interval_ranks(20) == (6, 15)  # P(Bin(20, 1/2) <= 5) = 0.021; <= 6 would be 0.058


def test_the_interval_ignores_how_far_out_an_outlier_lies():
    values = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 50.0]
    assert median_interval(values) == (1.1, 1.9)


# --- estimates ------------------------------------------------------------------------------------------------

def test_the_estimate_is_the_median_per_pair_ratio():
    est = estimate([pair(r) for r in (1.2, 1.5, 1.3)])
    assert est.ratio == pytest.approx(1.3) and est.repeats == 3 and not est.has_interval


@pytest.mark.parametrize("ratios, verdict", [
    ((1.40, 1.42, 1.45, 1.41, 1.43, 1.44), "faster"),
    ((0.70, 0.72, 0.71, 0.69, 0.73, 0.70), "slower"),
    ((0.95, 1.02, 0.99, 1.05, 0.97, 1.01), "no measurable difference"),
])
def test_the_verdict_follows_the_interval(ratios, verdict):
    assert estimate([pair(r) for r in ratios]).verdict == verdict


def test_without_an_interval_there_is_no_verdict():
    assert estimate([pair(1.5), pair(1.6)]).verdict is None


def test_the_description_gives_median_interval_and_repeats():
    est = estimate([pair(r) for r in (1.37, 1.40, 1.42, 1.43, 1.45, 1.48)])
    assert est.describe() == "1.42×, 95% interval 1.37–1.48, 6 repeats"


def test_the_description_before_six_repeats_gives_the_range_and_says_why_no_interval():
    assert estimate([pair(1.3), pair(1.5)]).describe() == (
        "1.40× (range 1.30–1.50, 2 repeats; a 95% interval needs 6)")


def test_an_estimate_records_whether_both_sides_timed_the_same_tokens():
    uneven = Pair(Timing(10, 1.0), Timing(9, 1.0), True)
    assert estimate([pair(1.2)]).same_tokens and not estimate([uneven]).same_tokens


def test_the_export_record_has_the_figure_its_interval_and_the_rule():
    record = estimate([pair(r) for r in (1.2,) * 6], state="done").to_dict()
    assert {"ratio", "low", "high", "repeats", "verdict", "description", "rule"} <= set(record)


# --- the measuring loop -----------------------------------------------------------------------------------------

def test_an_estimate_is_yielded_after_every_pair():
    estimates = run(Scripted([1.0, 2.0] * 5), Policy(min_repeats=6, max_repeats=10, tolerance=0.03, budget_s=99))
    assert [e.repeats for e in estimates] == list(range(1, 11))
    assert all(not e.final for e in estimates[:-1]) and estimates[-1].state == "done"


def test_pairs_alternate_which_contestant_runs_first():
    scripted = Scripted([1.5] * 4)
    run(scripted, Policy(min_repeats=4, max_repeats=4, budget_s=99))
    assert scripted.calls == ["lead", "follow", "follow", "lead", "lead", "follow", "follow", "lead"]


def test_the_follower_is_asked_for_exactly_the_leads_token_count():
    scripted = Scripted([1.5] * 3, tokens=37)
    run(scripted, Policy(min_repeats=3, max_repeats=3, budget_s=99))
    assert scripted.follow_counts == [37, 37, 37]


def test_a_tight_interval_ends_the_measurement_at_the_minimum_repeats():
    estimates = run(Scripted([1.5] * 40), Policy(min_repeats=6, tolerance=0.03, budget_s=99))
    assert estimates[-1].repeats == 6 and estimates[-1].state == "done"


def test_a_noisy_measurement_goes_on_until_the_budget_ends():
    noisy = [1.0, 2.0] * 20
    policy = Policy(min_repeats=6, tolerance=0.03, budget_s=10, hard_budget_s=99)
    estimates = run(Scripted(noisy), policy, clock=Clock(step=1.0))
    assert estimates[-1].state == "budget" and 6 <= estimates[-1].repeats < 40


def test_the_budget_ends_a_measurement_once_it_has_an_interval():
    noisy = [1.0, 2.0] * 20
    policy = Policy(min_repeats=6, budget_s=0.0, hard_budget_s=1e9)
    estimates = run(Scripted(noisy), policy, clock=Clock(step=100.0))
    assert estimates[-1].repeats == 6 and estimates[-1].state == "budget"


def test_the_hard_budget_ends_a_slow_measurement_at_the_floor():
    policy = Policy(min_repeats=6, floor_repeats=3, budget_s=0.0, hard_budget_s=0.0)
    estimates = run(Scripted([1.5] * 5), policy, clock=Clock(step=100.0))
    assert estimates[-1].repeats == 3 and estimates[-1].state == "budget"


def test_stop_ends_the_measurement_and_keeps_the_pairs_so_far():
    scripted, stop = Scripted([1.5] * 10), []
    stream = measure(scripted.lead, scripted.follow, Policy(budget_s=99), should_stop=lambda: bool(stop))
    next(stream), next(stream)
    stop.append(True)
    last = list(stream)[-1]
    assert last.state == "stopped" and last.repeats == 2


def test_stop_between_the_two_runs_of_a_pair_drops_the_half_pair():
    scripted = Scripted([1.5] * 10)
    calls = iter([False, True])
    last = list(measure(scripted.lead, scripted.follow, should_stop=lambda: next(calls, True)))[-1]
    assert last.repeats == 0 and scripted.calls == ["lead"]


def test_a_finished_measurement_is_reused_without_running_anything():
    done = Measurement(pairs=[pair(1.4)] * 6, state="done")
    scripted = Scripted([2.0])
    estimates = run(scripted, Policy(), measurement=done)
    assert len(estimates) == 1 and estimates[0].ratio == pytest.approx(1.4) and scripted.calls == []


def test_a_stopped_measurement_is_continued():
    stopped = Measurement(pairs=[pair(1.4)] * 2, state="stopped")
    estimates = run(Scripted([1.4] * 10), Policy(min_repeats=6, budget_s=99), measurement=stopped)
    assert estimates[0].repeats == 3 and estimates[-1].repeats == 6


def test_only_the_latest_pair_keeps_its_full_run_records():
    m = Measurement()
    m.add(Pair(Timing(5, 1.0, result="spec-1"), Timing(5, 2.0, result="base-1"), True))
    m.add(Pair(Timing(5, 1.0, result="spec-2"), Timing(5, 2.0, result="base-2"), False))
    assert (m.lead_result, m.follow_result) == ("spec-2", "base-2")
    assert all(p.lead.result is None and p.follow.result is None for p in m.pairs)


# --- configurations and the engine ---------------------------------------------------------------------------------

def test_the_configuration_key_covers_every_setting():
    target, draft = FakeModel("t"), FakeModel("d")
    key = config_key(target, draft, [1, 2], DecodeSettings(k=4))
    assert key != config_key(target, draft, [1, 2], DecodeSettings(k=5))
    assert key != config_key(target, draft, [1, 2], DecodeSettings(k=4, seed=1))
    assert key != config_key(target, FakeModel("e"), [1, 2], DecodeSettings(k=4))
    assert key == config_key(target, draft, (1, 2), DecodeSettings(k=4))


def test_a_cached_configuration_is_measured_once():
    engine, cache = FakeEngine(), {}
    args = (engine, FakeModel("t"), FakeModel("d"), [1, 2], DecodeSettings(max_new_tokens=8))
    first = list(measure_speedup(*args, cache=cache, policy=Policy(budget_s=0)))[-1]
    runs = len(engine.generations)
    again = list(measure_speedup(*args, cache=cache, policy=Policy(budget_s=0)))
    assert len(engine.generations) == runs and again == [first]


def test_engine_contestants_time_speculative_then_target_only_runs():
    engine = FakeEngine()
    lead, follow = engine_contestants(engine, FakeModel("t"), FakeModel("d"), [1], DecodeSettings(max_new_tokens=9))
    spec, base = lead(), follow(9)
    assert [g.draft is None for g in engine.generations] == [False, True]
    assert spec.tokens == base.tokens == 9 and spec.result.draft_name == "d" and base.result.draft_name is None


@pytest.fixture(scope="module")
def model_with_eos(tmp_path_factory):
    """A tiny target whose end-of-text token is the third token it generates greedily from [1, 2, 3]."""
    folder = tmp_path_factory.mktemp("eos")
    model = build_model(tiny_config("llama"), seed=0)
    tokens = generate(load_model(save(model, folder / "plain")), None, [1, 2, 3],
                      DecodeSettings(max_new_tokens=12)).token_ids
    eos = next(t for i, t in enumerate(tokens) if i >= 2 and t not in tokens[:i])
    return load_model(save(model, folder / "eos", eos_token_id=eos)), tokens.index(eos) + 1


def test_the_target_only_run_goes_past_its_own_end_of_text_to_match_the_count(model_with_eos):
    target, natural = model_with_eos
    _, follow = engine_contestants(__import__("specdec"), target, None, [1, 2, 3], DecodeSettings(max_new_tokens=12))
    assert natural < 10 and follow(10).tokens == 10
