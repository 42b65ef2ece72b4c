"""The What-if panel and the cycle replay in Chromium, on the app as a Space runs it (SPACE_ID set).

One page, in order: the panel before any run (sliders redraw in the browser, no request), a fixed-seed run of
the lab pair, "Use my run" (sliders and the measured point from the run), the replay stepped through every
decision and compared with the run's exported trace, the projector mode; screenshots go to docs/screenshots/.
"""
import contextlib
import json
import os
import urllib.request

from specdec.ui.launch import ROOT, app_process

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.ui.test_browser import choose_example, launch_chromium

EXAMPLE = "prose · T=0.7"  # the lab pair, sampling with a fixed seed: rejections and draws u to check
SHOTS = ROOT / "docs" / "screenshots"
expect.set_options(timeout=240_000)
REQUESTS: list[str] = []  # every request the page sends (cleared by quiet())
RUN: dict = {}  # the run's exported trace

MOVE = """([id, value]) => { const el = document.getElementById(id), root = el.closest('.wi');
  const before = document.querySelector('#wi-speedup .wi-form').getAttribute('d'), draws = +root.dataset.draws;
  const t0 = performance.now(); el.value = value; el.dispatchEvent(new Event('input', {bubbles: true}));
  const ms = performance.now() - t0;
  return {ms, changed: document.querySelector('#wi-speedup .wi-form').getAttribute('d') !== before,
          draws: +root.dataset.draws - draws}; }"""
WALK = """() => { const fwd = document.getElementById('wi-fwd'), root = fwd.closest('.wi'), seen = [];
  for (let i = 0; i < 20000 && root.dataset.replayEnd !== '1'; i++) {
    fwd.click();
    const d = document.querySelector('#wi-replay .wi-decision');
    if (d) seen.push({step: +d.dataset.step, pos: +d.dataset.pos, p: +d.dataset.p, q: +d.dataset.q,
                      a: +d.dataset.a, u: d.dataset.u === '' ? null : +d.dataset.u, fate: d.dataset.fate,
                      text: d.textContent});
  }
  return seen; }"""


@contextlib.contextmanager
def space_env():
    old = os.environ.get("SPACE_ID")
    os.environ["SPACE_ID"] = "specdec/whatif-test"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SPACE_ID", None)
        else:
            os.environ["SPACE_ID"] = old


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    log = tmp_path_factory.mktemp("app") / "app.log"
    with space_env(), app_process(log, "--no-preload") as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        page = browser.new_page(viewport={"width": 1440, "height": 1100})
        page.set_default_timeout(240_000)
        page.goto(url)
        page.on("request", lambda r: REQUESTS.append(r.url))
        yield page
        browser.close()


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()


def quiet(page, seconds: float = 1.5) -> None:
    """Waits until the page has sent nothing for `seconds` (start-up polling over), then forgets what it sent."""
    while True:
        n = len(REQUESTS)
        page.wait_for_timeout(seconds * 1000)
        if len(REQUESTS) == n:
            REQUESTS.clear()
            return


def test_moving_alpha_redraws_within_100_ms_with_no_request(page):
    open_tab(page, "What if?")
    expect(page.locator("#wi-speedup svg .wi-form")).to_be_attached()
    quiet(page)
    for value in ("0.5", "0.9", "0.65"):
        moved = page.evaluate(MOVE, ["wi-alpha", value])
        assert moved["changed"] and moved["draws"] == 1 and moved["ms"] < 100, moved
    page.locator("#wi-alpha").focus()  # keyboard: the native slider steps with the arrow keys
    before = page.locator("#wi-alpha-out").inner_text()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#wi-alpha-out")).not_to_have_text(before)
    page.locator("#wi-k").focus()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#wi-k-out")).to_have_text("3")
    expect(page.locator("#wi-summary")).to_contain_text("best K")
    page.wait_for_timeout(300)
    assert REQUESTS == []


def test_the_monte_carlo_histogram_draws_in_the_browser(page):
    quiet(page)
    page.locator("#wi-mc").check()
    expect(page.locator("#wi-hist .wi-sim")).to_have_count(4)  # K = 3: lengths 0..3
    assert REQUESTS == []


def test_use_my_run_fills_the_sliders_and_draws_the_measured_point(page):
    open_tab(page, "Generate")
    choose_example(page, EXAMPLE)
    page.locator("#run-btn").click()
    page.wait_for_selector("#gen-status:has-text('Done.')")
    RUN["trace"] = trace(page)
    open_tab(page, "What if?")
    page.locator("#whatif-use").click()
    expect(page.locator("#wi-run-note")).to_contain_text("Filled from your run")
    run = RUN["trace"]
    assert float(page.locator("#wi-alpha").input_value()) == pytest.approx(run["alpha"], abs=0.006)
    assert int(page.locator("#wi-k").input_value()) == run["settings"]["k"]
    expect(page.locator("#wi-speedup .wi-run-point")).to_have_count(1)
    expect(page.locator("#wi-speedup")).to_contain_text(f"your run {run['speedup']['ratio']:.2f}×")
    expect(page.locator("#wi-hist .wi-mine")).to_have_count(run["settings"]["k"] + 1)
    SHOTS.mkdir(parents=True, exist_ok=True)
    top, plots = page.locator("#whatif-use").bounding_box(), page.locator("#whatif-panel .wi-plots").bounding_box()
    clip = {"x": plots["x"] - 8, "y": top["y"] - 8, "width": plots["width"] + 16,
            "height": plots["y"] + plots["height"] - top["y"] + 16}
    page.screenshot(path=str(SHOTS / "whatif-panel.png"), clip=clip, full_page=True)


def trace(page) -> dict:
    """The run's exported JSON trace (the Generate tab's download), fetched outside the page."""
    link = page.locator("a[href*='specdec-trace.json']").first
    expect(link).to_be_attached()
    href = link.get_attribute("href")
    url = href if href.startswith("http") else page.url.rstrip("/") + "/" + href.lstrip("/")
    with urllib.request.urlopen(url) as response:
        return json.load(response)


def test_the_replay_steps_through_every_decision_as_the_trace_records_it(page):
    quiet(page)
    seen = page.evaluate(WALK)
    expected = [(s["index"], d["position"], d["p"], d["q"], d["accept_prob"], d["uniform"],
                 "accepted" if d["accepted"] else "rejected")
                for s in RUN["trace"]["steps"] for d in s["drafted"] if d["evaluated"]]
    assert len(seen) == len(expected) > 0
    for got, (step, pos, p, q, a, u, fate) in zip(seen, expected):
        assert (got["step"], got["pos"], got["fate"]) == (step, pos, fate)
        assert got["p"] == pytest.approx(p) and got["q"] == pytest.approx(q) and got["a"] == pytest.approx(a)
        assert got["u"] == (None if u is None else pytest.approx(u))
        assert "min(1, p/q)" in got["text"] and "draw u" in got["text"]
    assert REQUESTS == []


def test_the_replay_steps_with_the_keyboard_and_is_screenshotted_at_a_rejection(page):
    rejected = next(s["index"] for s in RUN["trace"]["steps"] if any(d["evaluated"] and not d["accepted"]
                                                                   for d in s["drafted"]))
    page.locator("#wi-replay").focus()
    for _ in range(2000):  # back to the first rejection, with the keyboard
        page.keyboard.press("ArrowLeft")
        d = page.locator("#wi-replay .wi-decision")
        if d.count() and d.get_attribute("data-fate") == "rejected" and int(d.get_attribute("data-step")) == rejected:
            break
    expect(page.locator("#wi-replay .wi-decision")).to_have_attribute("data-fate", "rejected")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#wi-replay .tok-resampled, #wi-replay .wi-decision")).not_to_have_count(0)
    page.keyboard.press("ArrowLeft")
    page.locator("#wi-replay-box").screenshot(path=str(SHOTS / "whatif-replay.png"))
    assert REQUESTS == []


def test_the_projector_mode_enlarges_the_panel(page):
    size = "() => parseFloat(getComputedStyle(document.querySelector('.wi')).fontSize)"
    normal = page.evaluate(size)
    page.evaluate("() => document.body.classList.add('projector')")
    assert page.evaluate(size) > normal * 1.3
    page.evaluate("() => document.body.classList.remove('projector')")


def test_a_device_preset_puts_its_predicted_c_and_v_into_the_sliders(page):
    page.locator("#whatif-device input").click()
    page.get_by_role("option", name="NVIDIA H100 SXM").click()
    expect(page.locator("#wi-preset-note")).to_contain_text("NVIDIA H100 SXM")
    expect(page.locator("#wi-v-out")).to_have_text("1.00")
