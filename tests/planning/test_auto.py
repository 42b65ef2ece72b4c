"""The `auto` drafter and K: the choice from measured figures, the on/off controller, the cached cost probe, and
`auto` through the engine, the CLI and the app's callbacks."""
import json

from specdec import DecodeSettings, generate, load_model, start
from specdec.cli.main import main
from specdec.engine.schedules import OFF_BELOW, ON_ABOVE, PROBE_MAX_GAP, AutoSchedule, CostPrior
from specdec.engine.theory import expected_tokens_per_forward, theoretical_speedup, wilson_upper
from specdec.planning import costs as auto_costs
from specdec.planning.choice import (
    AUTO,
    DrafterCosts,
    alpha_from_tokens,
    card_alpha,
    choose,
    pool_target_side,
    prompt_kind,
    rank,
)
from specdec.planning.run import load_drafter

import pytest

FLAT_V = {k: 1.0 + 0.1 * k for k in range(1, 9)}


def chain(name, c=0.1, v=None, ks=range(1, 9)):
    v = v or FLAT_V
    return DrafterCosts(name, {k: c for k in ks}, {k: v[k] for k in ks})


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECDEC_RECORDS", raising=False)  # the records in this cache
    auto_costs._MEMORY.clear()


# --- the choice, as pure functions -------------------------------------------------------------------------

def test_choose_picks_the_drafter_and_k_with_the_highest_predicted_speedup():
    costs = {"cheap": chain("cheap", c=0.05), "costly": chain("costly", c=0.5)}
    choice = choose(costs, {"cheap": 0.6, "costly": 0.9}, k_max=8)
    best_cheap = max(theoretical_speedup(0.6, k, 0.05, FLAT_V[k]) for k in range(1, 9))
    best_costly = max(theoretical_speedup(0.9, k, 0.5, FLAT_V[k]) for k in range(1, 9))
    winner = "cheap" if best_cheap > best_costly else "costly"
    assert choice.drafter == winner and choice.best.predicted == pytest.approx(max(best_cheap, best_costly))
    assert choice.speculate and choice.why.startswith(f"auto chose {winner}, K={choice.best.k}: predicted")


def test_choose_stays_within_k_max():
    choice = choose({"d": chain("d", c=0.01, v={k: 1.0 for k in range(1, 9)})}, {"d": 0.95}, k_max=3)
    assert choice.best.k == 3


def test_choose_turns_speculation_off_when_no_candidate_predicts_a_speedup():
    choice = choose({"slow": chain("slow", c=0.6)}, {"slow": 0.2}, k_max=8)
    assert choice.drafter == "slow" and not choice.speculate
    assert choice.why.startswith("speculation off: no drafter predicts a speedup")


def test_choose_without_any_measured_candidate_runs_target_only_and_says_why():
    choice = choose({"d": chain("d")}, {"d": None}, k_max=4, kind="code")
    assert choice.drafter is None and not choice.speculate
    assert "speculation off" in choice.why and "code" in choice.why


def test_chain_drafters_share_the_median_target_side_and_trees_keep_their_own():
    costs = {"a": chain("a", v={k: 1.0 for k in range(1, 9)}), "b": chain("b", v={k: 2.0 for k in range(1, 9)}),
             "c": chain("c", v={k: 1.2 for k in range(1, 9)}), "tree": DrafterCosts("tree", {4: 0.1}, {4: 3.0}, tree=True)}
    pooled = pool_target_side(costs)
    assert {name: pooled[name].v[4] for name in "abc"} == {"a": 1.2, "b": 1.2, "c": 1.2}
    assert pooled["tree"].v == {4: 3.0} and pooled["a"].c == costs["a"].c


def test_a_tree_is_ranked_at_its_cards_depth_only():
    tree = DrafterCosts("tree", {4: 0.1}, {4: 1.5}, tree=True)
    assert [c.k for c in rank({"tree": tree}, {"tree": 0.7}, k_max=8)] == [4]
    assert rank({"tree": tree}, {"tree": 0.7}, k_max=3) == []


def test_alpha_from_tokens_inverts_expected_tokens_per_forward():
    for alpha in (0.1, 0.5, 0.8):
        assert alpha_from_tokens(expected_tokens_per_forward(alpha, 4)) == pytest.approx(alpha, abs=1e-6)
    assert alpha_from_tokens(1.0) == 0.0


def test_card_alpha_reads_the_figure_of_the_prompt_kind_and_mode():
    card = {"figures": {"greedy": {"code": {"tokens_per_forward": expected_tokens_per_forward(0.6, 4)}}}}
    assert card_alpha(card, "code", "greedy") == pytest.approx(0.6, abs=1e-6)
    assert card_alpha(card, "chat", "greedy") is None and card_alpha(card, "code", "T0.7") is None


@pytest.mark.parametrize("text, kind", [
    ("Please write a Python function that returns the median of a list.", "code"),
    ("Explain what this does:\n```\nx = 1\n```", "code"),
    ("Summarize the following in one short paragraph:\n\nThe quick brown fox.", "rewrite"),
    ("Rewrite this text so a beginner can understand it:\n\nEntropy grows.", "rewrite"),
    ("Can you tell me about lighthouses?", "chat"),
])
def test_prompt_kind_is_read_from_the_prompt(text, kind):
    assert prompt_kind(text) == kind


def test_the_wilson_upper_bound_of_no_successes_is_z_squared_over_n_plus_z_squared():
    assert wilson_upper(0.0, 4, 1.0) == pytest.approx(1 / 5)
    assert wilson_upper(0.5, 0, 1.0) == 1.0 and wilson_upper(0.9, 100, 1.0) > 0.9


# --- the controller (schedules.AutoSchedule) ---------------------------------------------------------------

def prior(alpha, c=0.1):
    return CostPrior(alpha, {k: c for k in range(1, 5)}, {k: 1.0 + 0.1 * k for k in range(1, 5)})


def feed(schedule, steps, accepted_each, k=1):
    for _ in range(steps):
        drafted = schedule.next_k()
        if drafted == 0:
            schedule.update(0, 0, 0, 0.0, 0.01)
        else:
            schedule.update(drafted, min(accepted_each + 1, drafted), min(accepted_each, drafted), 0.001 * drafted,
                            0.011)


def test_auto_schedule_speculates_at_the_best_k_when_the_prior_predicts_a_speedup():
    schedule = AutoSchedule(4, prior(0.8))
    k = schedule.next_k()
    assert schedule.decision.kind == "speculate" and k >= 1
    assert schedule.decision.predicted > 1 and f"best K={k}" in schedule.decision.why


def test_auto_schedule_starts_off_when_the_prior_predicts_no_speedup():
    schedule = AutoSchedule(4, prior(0.05, c=0.5))
    assert schedule.next_k() == 0 and schedule.decision.kind == "off"


def test_auto_schedule_goes_off_once_the_runs_own_alpha_says_speculation_is_slower():
    schedule = AutoSchedule(4, prior(0.7))
    feed(schedule, 40, accepted_each=0)
    assert schedule.next_k() == 0 and schedule.decision.kind == "off"
    assert schedule.decision.predicted < OFF_BELOW


def test_auto_schedule_stays_on_through_a_few_early_rejections():
    schedule = AutoSchedule(4, prior(0.5))
    feed(schedule, 3, accepted_each=0)  # each step evaluates one draft, rejected
    assert schedule.next_k() > 0 and schedule.decision.kind == "speculate"


def rejections_until_off(step_cost_c, step_cost_v):
    schedule = AutoSchedule(4, CostPrior(0.55, {k: step_cost_c for k in range(1, 5)},
                                         {k: step_cost_v + 0.1 * k for k in range(1, 5)}))
    for rejected in range(100):
        if schedule.next_k() == 0:
            return rejected
        schedule.update(1, 1, 0, 0.001, 0.011)
    return None


def test_auto_schedule_goes_off_after_fewer_rejections_where_a_step_costs_more():
    # a step 1.45x a plain one (the lab kernels' K = 1): speculation needs alpha > 0.45 there, 0.2 where it is 1.2x
    costly, cheap = rejections_until_off(0.25, 1.1), rejections_until_off(0.1, 1.0)
    assert costly is not None and cheap is not None and 2 <= costly < cheap


def test_auto_schedule_probes_at_k1_while_off_and_comes_back_when_alpha_recovers():
    schedule = AutoSchedule(4, prior(0.05, c=0.5))
    kinds = []
    for _ in range(400):
        k = schedule.next_k()
        kinds.append(schedule.decision.kind)
        if k:  # every drafted token is accepted from now on
            schedule.update(k, k, k, 0.0005 * k, 0.011)
        else:
            schedule.update(0, 0, 0, 0.0, 0.01)
    first_probe = kinds.index("probe")
    assert kinds[:first_probe] == ["off"] * AutoSchedule.probe_every
    assert kinds[-1] == "speculate" and schedule.decision.predicted > ON_ABOVE


def test_auto_schedule_doubles_the_gap_between_probes_that_leave_it_off():
    schedule = AutoSchedule(4, prior(0.05, c=0.5))
    kinds = []
    first = AutoSchedule.probe_every
    for _ in range(first + 2 * first + PROBE_MAX_GAP + PROBE_MAX_GAP + 4):
        k = schedule.next_k()
        kinds.append(schedule.decision.kind)
        schedule.update(k, k, 0, 0.0005 * k, 0.011) if k else schedule.update(0, 0, 0, 0.0, 0.01)
    probes = [i for i, kind in enumerate(kinds) if kind == "probe"]
    gaps = [later - earlier - 1 for earlier, later in zip(probes, probes[1:])]
    assert probes[0] == first and gaps == [min(2 * first, PROBE_MAX_GAP), PROBE_MAX_GAP, PROBE_MAX_GAP]


def test_auto_schedule_drafts_one_token_when_the_second_is_always_rejected():
    # pooled over positions alpha is 0.5, which would pick K=2 here (1.75 / 1.14 > 1.5 / 1.07); by position: 1.0, 0.0
    schedule = AutoSchedule(2, CostPrior(0.5, {1: 0.02, 2: 0.02}, {1: 1.05, 2: 1.1}))
    for _ in range(40):
        schedule.update(2, 2, 1, 0.0004, 0.011)  # the first draft accepted, the second rejected
    assert schedule.next_k() == 1


def test_a_position_without_evidence_is_taken_to_be_as_good_as_the_one_before():
    schedule = AutoSchedule(3, prior(0.7))
    for _ in range(30):
        schedule.update(1, 1, 0, 0.0001, 0.011)  # position 1 always rejected: positions 2, 3 never evaluated
    first, second, third = schedule.position_alphas(3)
    assert first < 0.1 and second == pytest.approx(first, abs=1e-9) and third == pytest.approx(first, abs=1e-9)


def switched_off_by_rejections():
    """An auto schedule at K=1 that went off after rejected drafts, each step timed at 12 ms."""
    schedule = AutoSchedule(1, CostPrior(0.5, {1: 0.1}, {1: 1.1}))
    while schedule.next_k():
        schedule.update(1, 1, 0, 0.001, 0.011)
    return schedule


def test_one_slow_plain_step_does_not_switch_speculation_back_on():
    schedule = switched_off_by_rejections()
    schedule.update(0, 0, 0, 0.0, 0.030)  # a plain step that a busy CPU made 2.5x slower than speculative steps
    assert schedule.next_k() == 0 and schedule.decision.kind == "off"


def test_the_priors_costs_are_kept_however_the_runs_own_steps_are_timed():
    schedule = switched_off_by_rejections()
    for _ in range(16):
        schedule.update(0, 0, 0, 0.0, 0.030)
    assert schedule.step_cost(1) == pytest.approx(0.1 + 1.1)


def test_without_a_prior_the_runs_own_step_times_are_the_cost():
    schedule = AutoSchedule(1)
    schedule.update(0, 0, 0, 0.0, 0.010)
    schedule.update(1, 1, 0, 0.001, 0.011)
    assert schedule.step_cost(1) == pytest.approx(0.012 / 0.010)


def test_auto_schedule_keeps_its_state_between_the_two_thresholds():
    schedule = AutoSchedule(1, CostPrior(0.5, {1: 0.1}, {1: 1.0}))
    schedule.best = lambda: (1, (OFF_BELOW + ON_ABOVE) / 2)
    assert schedule.next_k() == 1  # on, and stays on
    schedule.on = False
    assert schedule.next_k() == 0  # off, and stays off


def test_auto_schedule_drafts_a_tree_at_the_depth_its_costs_were_measured_at():
    schedule = AutoSchedule(8, CostPrior(0.7, {4: 0.1}, {4: 1.5}, tree=True))
    assert schedule.next_k() == 4 and schedule.decision.kind == "speculate"


def test_auto_schedule_without_a_prior_times_a_plain_step_first():
    schedule = AutoSchedule(4)
    assert schedule.next_k() == 0 and "timing a plain step" in schedule.decision.why
    schedule.update(0, 0, 0, 0.0, 0.01)
    assert schedule.next_k() == 4  # then speculates at the largest K to measure its costs


# --- the cost probe, its cache, and auto through the engine (lab models: instant) --------------------------

@pytest.fixture(scope="module")
def lab():
    return load_model("lab-target"), load_model("lab-draft-distilled")


def test_the_probe_measures_c_and_v_for_every_k(lab):
    target, draft = lab
    from specdec.drafters.draft_model import as_drafter

    costs = auto_costs.measure_costs(target, as_drafter(target, draft), auto_costs.probe_prompt(target), k_max=3)
    assert sorted(costs.c) == sorted(costs.v) == [1, 2, 3]
    assert all(c > 0 for c in costs.c.values()) and all(v > 0 for v in costs.v.values()) and costs.plain_ms > 0


def test_the_probes_unit_is_a_step_of_the_target_alone_before_and_after(lab, monkeypatch):
    target, draft = lab
    from specdec.drafters.draft_model import as_drafter

    runs = iter([[0.001] * 3, [0.003] * 3])  # the target-only runs before and after the drafter's
    monkeypatch.setattr(auto_costs, "target_only_steps", lambda *a: next(runs))
    costs = auto_costs.measure_costs(target, as_drafter(target, draft), auto_costs.probe_prompt(target), k_max=2)
    assert costs.plain_ms == pytest.approx(2.0)  # the median of both runs' steps


def test_costs_are_ratios_to_the_plain_step_given(lab):
    from types import SimpleNamespace

    def step(k, draft_s, side_s):
        return SimpleNamespace(k=k, k_planned=k, draft_time_s=draft_s, verify_time_s=side_s, other_time_s=0.0)

    events = [step(1, 0.002, 0.011), step(2, 0.004, 0.012)] * 3  # drafting 2 ms per token, target side 10 + 1 ms K
    costs = auto_costs.costs_from_events("d", events, tree=False, warm_up=2, plain=0.010)
    assert costs.c == pytest.approx({1: 0.2, 2: 0.2}) and costs.v == pytest.approx({1: 1.1, 2: 1.2})
    assert costs.plain_ms == pytest.approx(10.0)


def test_the_probe_is_cached_in_the_model_cache_folder_and_reused(lab, monkeypatch):
    target, draft = lab
    from specdec.drafters.draft_model import as_drafter

    first = auto_costs.costs_for(target, as_drafter(target, draft), 3)
    auto_costs._MEMORY.clear()
    monkeypatch.setattr(auto_costs, "measure_costs", lambda *a, **k: pytest.fail("measured again"))
    assert auto_costs.costs_for(target, as_drafter(target, draft), 3) == first
    records = json.loads(auto_costs.machine_records.records_file(auto_costs.FILE_NAME).read_text())["records"]
    assert [json.loads(key)["drafter"] for key in records] == [draft.name]


def lab_auto(target, tokens_per_forward):
    """The auto drafter for the lab target, given a model card for lab-draft-distilled."""
    auto = load_drafter(AUTO, target)
    auto.cards = {"lab-draft-distilled": {"figures": {"greedy": {kind: {"tokens_per_forward": tokens_per_forward}
                                                                  for kind in ("chat", "code", "rewrite")}}}}
    return auto


def test_auto_runs_the_chosen_drafter_and_keeps_greedy_output_exact(lab):
    target, _ = lab
    ids = target.encode("def parse(argv):")
    settings = DecodeSettings(k=4, max_new_tokens=40)
    result = generate(target, lab_auto(target, 4.5), ids, settings)
    assert result.draft_name == AUTO and result.auto["drafter"] == "lab-draft-distilled"
    assert result.auto["prompt_kind"] == "code" and all(e.decision for e in result.events)
    assert result.token_ids == generate(target, None, ids, settings).token_ids


def test_a_planned_run_records_the_auto_schedule_it_ran_in_its_settings_once(lab):
    target, _ = lab
    settings = DecodeSettings(k=4, max_new_tokens=8, k_schedule="constant")
    result = generate(target, lab_auto(target, 4.5), target.encode("def parse(argv):"), settings)
    assert result.k_schedule == "auto" and result.to_dict()["settings"]["k_schedule"] == "auto"
    assert "k_schedule" not in result.to_dict()  # the schedule that ran is said once, in the settings


def test_a_run_with_a_named_drafter_records_the_settings_schedule(lab):
    target, draft = lab
    result = generate(target, draft, target.encode("x = 1"), DecodeSettings(k=3, max_new_tokens=4))
    assert result.k_schedule == "constant"


def test_auto_is_planned_before_the_engine_runs_and_the_engine_never_sees_the_planner(lab):
    target, _ = lab
    gen = start(target, lab_auto(target, 4.5), target.encode("def parse(argv):"), DecodeSettings(k=4, max_new_tokens=4))
    assert gen.drafter.name == "lab-draft-distilled" and gen.draft_label == AUTO and gen.plan["drafter"] == gen.drafter.name


def test_auto_with_a_drafter_that_cannot_pay_starts_with_speculation_off(lab, monkeypatch):
    target, _ = lab
    # the pair's costs as measured on a quiet machine (2-core AMD EPYC, lab kernels), not a probe taken under the test
    # run's load, whose stalled plain steps once read v(1) = 0.12 and so predicted a speedup with nothing accepted
    quiet = DrafterCosts("lab-draft-distilled", c={1: 1.38, 2: 1.14, 3: 1.06, 4: 1.02},
                         v={1: 1.36, 2: 1.65, 3: 1.93, 4: 2.21}, plain_ms=0.24)
    monkeypatch.setattr(auto_costs, "cached_costs", lambda target, name, k_max: quiet)
    ids = target.encode("def parse(argv):")
    settings = DecodeSettings(k=4, max_new_tokens=12)
    result = generate(target, lab_auto(target, 1.0), ids, settings)
    assert result.auto["why"].startswith("speculation off") and result.events[0].decision == "off"
    assert result.events[0].k == 0
    assert result.token_ids == generate(target, None, ids, settings).token_ids


def test_auto_on_a_target_without_model_cards_runs_target_only_and_says_why(lab):
    target, _ = lab
    result = generate(target, load_drafter(AUTO, target), target.encode("x = 1"), DecodeSettings(max_new_tokens=5))
    assert result.draft_name == AUTO and result.auto["drafter"] is None
    assert result.auto["why"].startswith("speculation off") and result.metrics.drafted_tokens == 0


# --- the CLI and the app ----------------------------------------------------------------------------------

def test_cli_accepts_draft_auto_and_k_auto(capsys):
    code = main(["generate", "--target", "lab-target", "--draft", "auto", "--k", "auto", "--prompt-ids", "5,6,7",
                 "--max-new-tokens", "6", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["draft"] == AUTO and report["settings"]["k_schedule"] == AUTO
    assert report["settings"]["k"] == 8 and report["auto"]["why"]


def test_cli_refuses_a_k_that_is_neither_a_number_nor_auto(capsys):
    code = main(["generate", "--target", "lab-target", "--k", "many", "--prompt-ids", "5"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "integer or auto" in err


def test_the_cost_model_asks_for_a_drafter_instead_of_auto():
    from specdec.measure.cost_model import Network, draft_shape

    with pytest.raises(ValueError, match="No cost model for auto"):
        draft_shape(AUTO, Network("t", 2, 64, 4, 4, 16, 128, 1000))


def test_the_generate_callback_shows_the_auto_choice_and_speculation_off_on_the_cards():
    from specdec.ui.session import Session
    from specdec.ui.tabs.generate.callbacks import Lab

    from tests.ui_fakes import FakeEngine, form_request

    lab = Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)
    updates = list(lab.generate(Session(), form_request(prompt="def f(x):", clean=False, target="lab-target",
                                                        draft=AUTO, k=4, temperature=0.0, max_new_tokens=24)))
    cards = updates[-1]["cards"]
    assert "auto chose lab-draft, K=1: predicted 1.20x" in cards
    assert "speculation off: " in cards and 'data-metric="auto"' in cards
