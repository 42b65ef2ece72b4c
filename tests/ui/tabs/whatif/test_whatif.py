"""The What-if panel's JavaScript (views/whatif.js) against specdec/engine/theory.py on one table of inputs, run in
Chromium without the app; and the replay data (views/replay.py) against the events it comes from."""
import json
from dataclasses import replace
from types import SimpleNamespace

from specdec.engine import theory
from specdec.engine.events import TreeNode
from specdec.ui.session import RunView
from specdec.ui.tabs.whatif import layout as whatif
from specdec.ui.tabs.whatif.callbacks import preset_curve
from specdec.ui.views.replay import accepted_lengths, replay_steps, run_data

import pytest
from playwright.sync_api import sync_playwright

from tests.ui.tabs.whatif.test_browser_whatif import WALK
from tests.ui.test_browser import launch_chromium
from tests.ui_fakes import make_step, mixed_run

ALPHAS = [0.0, 0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.999, 1.0]
KS = [1, 2, 3, 4, 5, 7, 8, 12, 16]
CS = [0.0, 0.01, 0.05, 0.2, 0.6]
VS = [1.0, 0.8, 1.3, 2.2]
VECTORS = [(a, k, c, v) for a in ALPHAS for k in KS for c in CS for v in VS]


@pytest.fixture(scope="module")
def js():
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        page = browser.new_page()
        page.set_content("<html><body></body></html>")
        page.add_script_tag(content=whatif.SCRIPT.read_text(encoding="utf-8"))
        yield page
        browser.close()


def test_the_js_gives_theorys_numbers_for_the_same_inputs(js):
    got = js.evaluate("""vs => vs.map(([a, k, c, v]) => [SpecDecTheory.E(a, k), SpecDecTheory.speedup(a, k, c, v),
                                                        SpecDecTheory.speedup(a, k, c)])""", VECTORS)
    for (alpha, k, c, v), (e, form, textbook) in zip(VECTORS, got):
        assert e == pytest.approx(theory.expected_tokens_per_forward(alpha, k), rel=1e-12)
        assert form == pytest.approx(theory.theoretical_speedup(alpha, k, c, v), rel=1e-12)
        assert textbook == pytest.approx(theory.theoretical_speedup(alpha, k, c), rel=1e-12)


def test_the_js_best_k_is_theorys_and_follows_the_v_line(js):
    pairs = [(a, c) for a in ALPHAS for c in CS]
    got = js.evaluate("ps => ps.map(([a, c]) => SpecDecTheory.bestK(a, c, 16))", pairs)
    assert got == [theory.best_k(a, c) for a, c in pairs]
    # with v(k) on the line through v(0) = 1 and v(K) at K: the same argmax as theory's speedup over k
    for vk, big_k in ((1.6, 4), (2.2, 8)):
        line = [max(0.05, 1 + (vk - 1) * k / big_k) for k in range(1, 17)]
        got = js.evaluate(f"ps => ps.map(([a, c]) => SpecDecTheory.bestK(a, c, 16, k => SpecDecTheory.vAt({vk}, "
                          f"{big_k}, k)))", pairs)
        want = [max(range(1, 17), key=lambda k: theory.theoretical_speedup(a, k, c, line[k - 1])) for a, c in pairs]
        assert got == want


def test_the_monte_carlo_draws_follow_the_truncated_geometric_law(js):
    for alpha, k in ((0.8, 4), (0.3, 6)):
        counts = js.evaluate(f"() => SpecDecTheory.simulate({alpha}, {k}, 40000)")
        shares = [n / sum(counts) for n in counts]
        law = [alpha ** i * (1 - alpha) for i in range(k)] + [alpha ** k]
        assert shares == pytest.approx(law, abs=0.015)
        mean = sum(i * s for i, s in enumerate(shares)) + 1  # + the resampled / bonus token
        assert mean == pytest.approx(theory.expected_tokens_per_forward(alpha, k), abs=0.05)


def tree_run():
    step = make_step(3, [(" a", True), (" b", False)], (" c", "resampled"))
    step.tree = [TreeNode(11, " a", -1, True), TreeNode(12, " z", -1, False), TreeNode(13, " b", 0, False)]
    return [*mixed_run(), step]


def test_the_replay_data_carries_every_decision_as_the_events_record_it():
    events = tree_run()
    steps = replay_steps(events)
    assert [s["index"] for s in steps] == [e.index for e in events]
    for s, e in zip(steps, events):
        assert [(d["p"], d["q"], d["a"], d["u"], d["fate"]) for d in s["drafted"]] == \
            [(d.p, d.q, d.accept_prob, d.uniform, d.fate) for d in e.drafted]
        assert s["final"] == {"text": e.final.text, "kind": e.final.kind, "p": e.final.p}
    assert [n["parent"] for n in steps[-1]["tree"]] == [-1, -1, 0]
    json.dumps(steps)  # plain data


def test_run_data_takes_alpha_the_measured_speedup_and_the_accepted_lengths():
    events = [replace(e) for e in mixed_run()]
    result = SimpleNamespace(settings=SimpleNamespace(k=2), metrics=SimpleNamespace(tokens_per_forward=2.0))
    estimate = SimpleNamespace(ratio=1.4, low=1.2, high=1.6, repeats=8)
    data = run_data(RunView("p", events, result, estimate=estimate))
    assert data["alpha"] == pytest.approx(theory.measured_alpha(events))
    assert (data["speedup"], data["low"], data["high"], data["k"]) == (1.4, 1.2, 1.6, 2)
    assert data["c"] is None and data["v"] is None  # no timed pair: not measured
    assert data["lengths"] == accepted_lengths(events, 2) == [0, 1, 1]
    assert run_data(None) is None


def test_the_replay_in_the_browser_shows_each_decision_and_the_tree(js):
    events = tree_run()
    result = SimpleNamespace(settings=SimpleNamespace(k=3), metrics=SimpleNamespace(tokens_per_forward=2.0))
    js.set_content(f"<html><body>{whatif.SHELL}</body></html>")
    js.add_script_tag(content=whatif.SCRIPT.read_text(encoding="utf-8"))
    js.evaluate("data => { SpecDecWhatIf.mount(document.body); SpecDecWhatIf.load(data); }",
                run_data(RunView("p", events, result)))
    seen = js.evaluate(WALK)
    want = [(e.index, d.position, d.fate, d.uniform) for e in events for d in e.drafted if d.evaluated]
    assert [(s["step"], s["pos"], s["fate"], s["u"]) for s in seen] == want
    assert js.locator("#wi-replay .draft-tree .tok").count() == 3  # the last step drew its tree
    assert js.locator("#wi-replay .tok-resampled").count() == 1
    js.locator("#wi-replay").focus()
    js.keyboard.press("ArrowLeft")
    assert js.locator("#wi-replay .tok-resampled").count() == 0


def test_a_device_preset_gives_the_cost_models_c_and_v_for_every_k():
    from specdec.measure.device_presets import preset
    from specdec.models import presets
    from specdec.ui.cost_prediction import prediction

    data = preset_curve(presets.LAB_TARGET, presets.LAB_DRAFT, "", "", "h100")["whatif_preset"]
    pred = prediction(presets.LAB_TARGET, presets.LAB_DRAFT, 16, preset("h100"), "auto", None)
    assert data["v"] == list(pred.v) and data["c"] == list(pred.c) and len(data["v"]) == 16
    assert preset_curve(presets.LAB_TARGET, presets.LAB_DRAFT, "", "", "")["whatif_preset"] == {}


def test_the_panel_draws_the_presets_v_and_leaves_it_when_v_is_moved(js):
    js.set_content(f"<html><body>{whatif.SHELL}</body></html>")
    js.add_script_tag(content=whatif.SCRIPT.read_text(encoding="utf-8"))
    v = [1 + 0.1 * k for k in range(1, 17)]
    js.evaluate("data => { SpecDecWhatIf.mount(document.body); SpecDecWhatIf.loadPreset(data); }",
                {"label": "Device", "pair": "a with b", "c": [0.02] * 16, "v": v})
    alpha = float(js.locator("#wi-alpha").input_value())
    want = theory.theoretical_speedup(alpha, 4, 0.02, v[3])
    assert f"speedup at K = 4: {want:.2f}×" in js.locator("#wi-summary").inner_text()
    assert js.locator("#wi-v-out").inner_text() == f"{v[3]:.2f}"
    js.locator("#wi-k").focus()
    js.keyboard.press("ArrowRight")  # K = 5: the preset's v(5)
    assert js.locator("#wi-v-out").inner_text() == f"{v[4]:.2f}"
    js.locator("#wi-v").focus()
    js.keyboard.press("ArrowRight")  # moving v leaves the preset for the line
    assert js.locator("#wi-preset-note").inner_text() == ""


def test_play_steps_the_replay_by_itself_and_pauses(js):
    js.set_content(f"<html><body>{whatif.SHELL}</body></html>")
    js.add_script_tag(content=whatif.SCRIPT.read_text(encoding="utf-8"))
    result = SimpleNamespace(settings=SimpleNamespace(k=3), metrics=SimpleNamespace(tokens_per_forward=2.0))
    js.evaluate("data => { SpecDecWhatIf.mount(document.body); SpecDecWhatIf.load(data); }",
                run_data(RunView("p", mixed_run(), result)))
    where = js.locator("#wi-replay .wi-where")
    start = where.inner_text()
    js.locator("#wi-play").focus()
    js.keyboard.press("Enter")  # a native button: Enter presses it
    js.wait_for_function(f"() => document.querySelector('#wi-replay .wi-where').textContent !== {start!r}")
    assert js.locator("#wi-play").get_attribute("aria-pressed") == "true"
    js.keyboard.press("Enter")
    assert js.locator("#wi-play").get_attribute("aria-pressed") == "false"
