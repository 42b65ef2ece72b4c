"""A speedup is a measurement of the run shown (specdec.measure.speedup: ShownRun, pair_fault, bound_fault;
Drafter.snapshot / replaying): every timed repeat of a drafter that learns across requests starts from the state the
shown run started from, and a figure its own run contradicts is a fault of the measurement, never a result."""
import specdec
from specdec import DecodeSettings, generate, load_model
from specdec.drafters import registry, suffix
from specdec.drafters.base import Drafter, one_hot_rows
from specdec.engine.proposals import Proposal
from specdec.measure.speedup import (
    BOUND_SLACK,
    Pair,
    Policy,
    ShownRun,
    Timing,
    config_key,
    engine_contestants,
    estimate,
    measure,
    measure_speedup,
)

import pytest

from tests.drafters.test_suffix import fresh_stores  # noqa: F401 (autouse: no earlier requests, a local deployment)

FEW = Policy(min_repeats=6, floor_repeats=3, max_repeats=6, tolerance=0.0, budget_s=60, hard_budget_s=60)
CODE = "def area(w, h):\n    return w * h\n\ndef volume(w, h, d):\n    return w * h * d\n\n"


@pytest.fixture(scope="module")
def lab():
    return load_model("lab-target")


class Remembering(Drafter):
    """A cheat: it learns each prompt's output across requests and drafts it back, but keeps no snapshot of what it
    learnt (Drafter's default replaying is itself), so its timed repeats draft from the earlier repeats."""

    name, learns_across_requests = "remembering", True

    def __init__(self, vocab_limit: int):
        super().__init__(vocab_limit)
        self.outputs: dict[tuple, list[int]] = {}

    def start(self, prompt_ids, max_length):
        self.prompt = tuple(prompt_ids)

    def propose(self, seq, k, context):
        done = len(seq) - len(self.prompt)
        ids = self.outputs.get(self.prompt, [])[done: done + k]
        return Proposal(ids, one_hot_rows(ids, self.vocab_limit, "cpu") if ids else None)

    def finish(self, seq):
        self.outputs[self.prompt] = list(seq[len(self.prompt):])


class Scripted:
    """Contestants: the lead makes `tokens` tokens in `forwards` target forwards, `ratio` times as fast."""

    def __init__(self, ratio: float, tokens: int = 12, forwards: int = 12):
        self.ratio, self.tokens, self.forwards = ratio, tokens, forwards

    def lead(self) -> Timing:
        return Timing(self.tokens, 1.0 / self.ratio, target_forwards=self.forwards)

    def follow(self, n: int) -> Timing:
        return Timing(n, 1.0)


def run(scripted: Scripted, shown=None) -> list:
    return list(measure(scripted.lead, scripted.follow, FEW, shown=shown, clock=lambda: 0.0))


def test_a_drafter_that_drafts_its_earlier_repeats_back_is_a_fault_not_a_speedup(lab):
    ids, settings = lab.encode(CODE), DecodeSettings(k=6, max_new_tokens=24)
    cheat = Remembering(lab.real_vocab_size)
    shown = generate(lab, cheat, ids, settings)  # its first run: nothing learnt, one token per target forward
    final = list(measure_speedup(specdec, lab, cheat, ids, settings, policy=FEW, shown=ShownRun.of(shown)))[-1]
    assert shown.metrics.tokens_per_forward == 1.0
    assert final.state == "fault" and final.verdict is None and final.repeats == 1
    assert final.describe().startswith("no valid measurement: a timed repeat took")


def test_a_ratio_above_the_runs_tokens_per_forward_is_a_fault_once_the_measurement_ends():
    estimates = run(Scripted(3.5, tokens=12, forwards=12))
    assert estimates[-1].state == "fault" and estimates[-1].verdict is None
    assert "above the 1.00 tokens per target forward" in estimates[-1].fault


def test_a_ratio_above_the_bound_is_never_shown_as_a_figure_while_it_is_measured():
    estimates = run(Scripted(3.5))
    measuring = [e.describe() for e in estimates if e.fault is None]
    assert measuring and all(text.startswith("checking") and "3.50×" not in text for text in measuring)
    assert estimates[-1].describe().startswith("no valid measurement")


def test_a_ratio_within_the_runs_tokens_per_forward_is_a_result():
    final = run(Scripted(1.5, tokens=12, forwards=6))[-1]
    assert final.state == "done" and final.verdict == "faster" and final.bound == 2.0


def test_the_bound_is_the_run_shown_when_there_is_one():
    """The timed repeats' own tokens per forward cannot vouch for them: the run shown sets the bound."""
    shown = ShownRun(tuple(range(12)), 12, deterministic=False)
    final = run(Scripted(1.5, tokens=12, forwards=4), shown=shown)[-1]
    assert final.bound == 1.0 and final.state == "fault"


def test_noise_just_above_the_bound_is_not_a_fault():
    final = run(Scripted(1 + BOUND_SLACK / 2, tokens=12, forwards=12))[-1]
    assert final.state == "done" and final.fault is None


def test_an_estimate_without_known_forwards_has_no_bound():
    est = estimate([Pair(Timing(10, 0.1), Timing(10, 1.0), True)], state="done")
    assert est.bound is None and est.fault is None and est.ratio == 10.0


def test_every_timed_repeat_of_suffix_starts_from_the_store_the_run_shown_started_from(lab):
    ids, settings = lab.encode(CODE), DecodeSettings(k=8, max_new_tokens=32)
    drafter = registry.load_drafter("suffix", lab)
    generate(lab, drafter, ids, settings)  # an earlier request: the store now holds this prompt's output
    learned = drafter.snapshot()
    shown = generate(lab, drafter, ids, settings)  # the run shown: drafts the earlier output back
    final = list(measure_speedup(specdec, lab, drafter, ids, settings, policy=FEW, shown=ShownRun.of(shown),
                                 learned=learned))[-1]
    assert learned.requests == 1 and shown.metrics.tokens_per_forward > 2
    assert final.fault is None and final.repeats == 6
    assert len(suffix.STORES[lab.name].entries) == 2  # the two requests; no timed repeat recorded anything


def test_suffix_timed_on_a_prompt_its_store_never_saw_stays_within_its_tokens_per_forward(lab):
    ids, settings = lab.encode("import os\n\n\ndef walk(folder):\n"), DecodeSettings(k=8, max_new_tokens=32)
    drafter = registry.load_drafter("suffix", lab)
    learned = drafter.snapshot()
    shown = generate(lab, drafter, ids, settings)
    final = list(measure_speedup(specdec, lab, drafter, ids, settings, policy=FEW, shown=ShownRun.of(shown),
                                 learned=learned))[-1]
    assert learned.requests == 0 and final.fault is None
    assert final.ratio <= shown.metrics.tokens_per_forward * (1 + BOUND_SLACK)


def test_a_replaying_suffix_drafter_writes_nothing_to_the_shared_store(lab):
    drafter = registry.load_drafter("suffix", lab)
    generate(lab, drafter.replaying(drafter.snapshot()), lab.encode(CODE), DecodeSettings(k=4, max_new_tokens=8))
    assert suffix.STORES[lab.name].entries == {}


def test_runs_that_started_from_different_learnt_states_are_measured_apart(lab):
    drafter = registry.load_drafter("suffix", lab)
    ids, settings = lab.encode(CODE), DecodeSettings(k=4, max_new_tokens=8)
    before = drafter.snapshot()
    generate(lab, drafter, ids, settings)
    after = drafter.snapshot()
    assert config_key(lab, drafter, ids, settings, before) != config_key(lab, drafter, ids, settings, after)
    assert before.fingerprint != after.fingerprint and after.tokens == 8


def test_a_drafter_that_learns_nothing_across_requests_runs_itself_in_every_timed_repeat(lab):
    lookup = registry.load_drafter("prompt-lookup", lab)
    engine = RecordingEngine()
    lead, _ = engine_contestants(engine, lab, lookup, lab.encode(CODE), DecodeSettings(k=4, max_new_tokens=4))
    lead(), lead()
    assert engine.drafts == [lookup, lookup]


class RecordingEngine:
    def __init__(self):
        self.drafts = []

    def generate(self, target, draft, ids, settings):
        self.drafts.append(draft)
        return generate(target, draft, ids, settings)
