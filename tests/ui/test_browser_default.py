"""The app as a newcomer opens it: the default pair (SmolLM2-135M-Instruct, fetched and preloaded at
start) and the first example stream coloured tokens in a real browser (Debian's chromium, headless); a full run
of that example at 1280×800, its verdict and first tokens above the fold, is the README's screenshot. The app
measures as a Space does (limits.PUBLIC's timed repeats): the screenshot shows what a visitor of the demo sees, and
its measurement ends at those repeats instead of running to the local app's one-minute budget."""
from specdec.models import presets
from specdec.serving.limits import ENVIRONMENT, PUBLIC
from specdec.ui.launch import ROOT

import pytest
from playwright.sync_api import expect

from tests.ui.test_browser import browser_page, choose_example

SCREENSHOT = ROOT / "assets" / "screenshot.png"
expect.set_options(timeout=420_000)  # a fresh machine fetches and converts the model first (1–2 minutes)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with pytest.MonkeyPatch.context() as env:  # the app's process inherits it
        env.setenv(ENVIRONMENT["max_repeats"], str(PUBLIC.max_repeats))
        with browser_page(tmp_path_factory, timeout_ms=420_000) as page:
            yield page


def test_the_default_pair_is_the_real_target(page):
    expect(page.get_by_label("Target", exact=True)).to_have_value(presets.DEFAULT_TARGET)


def test_the_first_example_streams_coloured_tokens_on_the_default_pair(page):
    choose_example(page, "chat · explain (prose)")
    page.locator("#run-btn").click()
    expect(page.locator("#tokens .tok").first).to_be_visible()
    expect(page.locator("#tokens")).to_contain_text("light")  # SmolLM2's answer mentions light energy
    page.locator("#stop-btn").click()
    expect(page.locator("#gen-status")).to_contain_text("Stopped")


def test_screenshot_for_the_readme_shows_the_result_above_the_fold_at_1280x800(page):
    choose_example(page, "chat · explain (prose)")
    draft = page.get_by_label("Draft", exact=True).input_value()  # the default draft: measured here, or the cards'
    page.locator("#run-btn").click()
    expect(page.locator("#gen-status")).to_contain_text(f"Ran {presets.DEFAULT_TARGET} with {draft}")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.evaluate("window.scrollTo(0, 0)")
    for result in (page.locator("#gen-status .verdict-big"), page.locator("#tokens .tok-out .tok").first):
        b = result.evaluate("e => e.getBoundingClientRect().toJSON()")
        assert b["top"] >= 0 and b["bottom"] <= 800, b  # the verdict and the first coloured tokens, unscrolled
    page.screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 50_000
