"""The "Is it exact?" tab's callback and renderers (specdec/ui/tabs/lossless/callbacks.py, views/lossless.py), with a
fake engine and fake checks: no server, no model."""
from types import SimpleNamespace

from specdec.exactness.lossless import GreedyCheck, OutcomeBar, Progress, SamplingCheck, explain_difference, greedy_rule
from specdec.exactness.verifier_faults import ALWAYS_ACCEPT, REAL, choose_verifier
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.tabs.lossless.callbacks import check, result_json
from specdec.ui.views.lossless import histogram_figure, render_greedy

import pytest

from tests.ui_fakes import FakeEngine, split_request

SETTINGS = dict(prompt="Explain.", clean_whitespace=False, target="t", draft="d", target_custom="", draft_custom="",
                k=4, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=8, seed=0)
IDENTICAL = GreedyCheck(["A", "b"], ["A", "b"], [1, 2], [1, 2], None, "Identical: all 2 tokens match.", "float32")
DIFFERENT = GreedyCheck(["A", "x", "y"], ["A", "b", "c"], [1, 9, 8], [1, 2, 3], 1, "A near-tie: …", "float32")
BARS = [OutcomeBar(["A"], "A", 0.8, 810, 790), OutcomeBar(["B"], "B", 0.15, 140, 160),
        OutcomeBar([], "all other outcomes", 0.05, 50, 50)]


def sampled(p_value=0.5, verifier="real verifier", stopped=False) -> SamplingCheck:
    return SamplingCheck(verifier=verifier, verifier_explanation="…", tokens=1, requested=1000, draws=1000,
                         temperature=1.0, top_k=None, top_p=None, drafted=["You"], bars=BARS, cells=3,
                         p_value=p_value, tv=0.01, target_only_p_value=0.4, target_only_tv=0.01, stopped=stopped)


def fake_checks(greedy=IDENTICAL, sampling=None, on_greedy=lambda: None):
    """A stand-in for specdec.exactness.lossless: yields one Progress per check, returns the given results; records calls."""
    calls = []

    def compare_greedy(target, drafter, ids, settings, should_stop, verifier):
        calls.append(("greedy", verifier))
        yield Progress("greedy", 1, 2)
        on_greedy()
        return greedy

    def check_sampling(target, drafter, ids, settings, *, draws, tokens, verifier, should_stop):
        calls.append(("sampling", draws, tokens, verifier))
        yield Progress("draws", draws, draws)
        return sampling or sampled()

    return SimpleNamespace(compare_greedy=compare_greedy, check_sampling=check_sampling, calls=calls)


def run(checks, session=None, **changes):
    lab = Lab(FakeEngine(), heavy_interval_s=0.0)
    request, extras = split_request({**SETTINGS, **changes})
    updates = list(check(lab, session or Session(), request, **extras, progress=lambda *a, **k: None, checks=checks))
    return updates[-1], updates


def test_a_finished_check_shows_greedy_verdict_histogram_and_the_numbers():
    final, _ = run(fake_checks())
    assert 'data-verdict="exact"' in final["verdict"] and 'data-verdict="identical"' in final["greedy"]
    assert len(final["plot"].data) == 3 and final["result"]["sampling"]["p_value"] == 0.5
    assert final["result"]["passed"] is True and final["error"] == ""


def test_the_tab_passes_draws_tokens_and_the_chosen_verifier_to_the_check():
    checks = fake_checks()
    run(checks, draws=20_000, tokens=2, verifier="always accept the draft")
    assert checks.calls == [("greedy", "always accept the draft"), ("sampling", 20_000, 2, "always accept the draft")]


def test_a_broken_verifier_result_says_not_exact():
    final, _ = run(fake_checks(sampling=sampled(p_value=0.0, verifier="always accept the draft")))
    assert 'data-verdict="not exact"' in final["verdict"] and final["result"]["passed"] is False


def test_progress_reaches_the_status_line():
    _, updates = run(fake_checks())
    assert any("of 2 greedy tokens generated" in u.get("status", "") for u in updates)


def test_stop_during_greedy_skips_the_sampling_check():
    session = Session()
    checks = fake_checks(on_greedy=lambda: setattr(session, "stop_requested", True))
    final, _ = run(checks, session=session)
    assert checks.calls == [("greedy", "real verifier")] and final["result"]["sampling"] is None
    assert "Stopped" in final["status"]


def test_an_unknown_verifier_is_a_visible_error_before_anything_loads():
    checks = fake_checks()
    final, _ = run(checks, verifier="trust me")
    assert "error-box" in final["error"] and "trust me" in final["error"] and checks.calls == []


def test_an_engine_error_in_the_sampling_check_keeps_the_greedy_result_on_screen():
    checks = fake_checks()

    def refuse(*args, **kwargs):
        raise ValueError("prompt lookup proposes nothing here")
        yield

    checks.check_sampling = refuse
    _, updates = run(checks)
    assert 'data-verdict="identical"' in updates[-2]["greedy"] and "proposes nothing" in updates[-1]["error"]
    assert "greedy" not in updates[-1]


def test_the_first_difference_is_marked_in_both_rows():
    html = render_greedy(DIFFERENT)
    assert html.count('data-diff="first"') == 2 and "first difference at generated token 2" in html


@pytest.mark.parametrize("index", range(len(BARS)))
def test_the_histogram_overlays_the_exact_probability_on_each_outcome(index):
    figure = histogram_figure(sampled())
    spec, alone, exact = figure.data
    assert exact.y[index] == BARS[index].exact and spec.y[index] == BARS[index].speculative / 1000
    assert alone.y[index] == BARS[index].target_only / 1000


def test_the_json_result_holds_the_threshold_and_its_meaning():
    result = result_json(IDENTICAL, sampled())
    assert result["sampling"]["threshold"] == 0.001 and "999 times in 1,000" in result["sampling"]["threshold_meaning"]


# --- the greedy panel under a broken verifier --------------------------------------------------------------------

SAMPLING_ONLY = "one uniform draw for all positions"


def greedy_under(verifier: str, identical: bool) -> GreedyCheck:
    """The GreedyCheck compare_greedy gives under `verifier` (its cause and rule as the check words them)."""
    choice = choose_verifier(verifier)
    if choice.greedy is not None and not identical:
        cause = "The verifier keeps drafted tokens that are not the target's argmax (…)."
    else:
        cause = explain_difference(None if identical else 1, [], "float32", 2, guaranteed=verifier == REAL)
    first = None if identical else 1
    return GreedyCheck(["A", "x"], ["A", "b"] if not identical else ["A", "x"], [1, 9], [1, 2] if not identical else
                       [1, 9], first, cause, "float32", verifier=verifier, rule=greedy_rule(choice))


@pytest.mark.parametrize("verifier", [ALWAYS_ACCEPT, SAMPLING_ONLY])
@pytest.mark.parametrize("identical", [True, False])
def test_under_a_broken_verifier_the_greedy_panel_never_claims_the_guarantee(verifier, identical):
    html = render_greedy(greedy_under(verifier, identical))
    assert "guarantees" not in html and f"with the verifier &#x27;{verifier}&#x27;" in html


def test_always_accept_breaking_greedy_output_is_said_in_plain_words():
    html = render_greedy(greedy_under(ALWAYS_ACCEPT, identical=False))
    assert 'data-verdict="different"' in html and "Greedy, too, ran with" in html


def test_a_sampling_only_fault_says_the_greedy_check_ran_the_real_rule():
    html = render_greedy(greedy_under(SAMPLING_ONLY, identical=True))
    assert 'data-verdict="identical"' in html and "the greedy check ran the real rule" in html


def test_the_real_verifier_keeps_the_guarantee_and_names_no_rule():
    html = render_greedy(greedy_under(REAL, identical=True))
    assert "as greedy speculative decoding guarantees" in html and "data-greedy-rule" not in html
