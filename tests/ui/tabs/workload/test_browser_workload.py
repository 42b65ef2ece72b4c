"""The "Across requests" tab in Chromium, on the app as a Space runs it (SPACE_ID set), at 1280×800: a shipped
workload runs request by request, the plots and table fill in with both drafters, the page never scrolls
sideways; the projector mode enlarges the explanation and a 390×844 phone reaches Run. The 1280×800 screenshot goes to
docs/screenshots/workload-1280x800.png."""

from specdec.ui.launch import ROOT, app_process

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect, sync_playwright

from tests.ui.tabs.whatif.test_browser_whatif import space_env
from tests.ui.test_browser import launch_chromium
from tests.ui.test_browser_first_screen import LAPTOP, PHONE, on_screen

SHOTS = ROOT / "docs" / "screenshots"
WORKLOAD = "customer-records"  # six requests: the climb shows after the first
expect.set_options(timeout=120_000)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with space_env(), app_process(tmp_path_factory.mktemp("app") / "app.log", "--no-preload") as url, \
            sync_playwright() as pw:
        browser = launch_chromium(pw)
        yield browser, url
        browser.close()


def open_tab(browser, url: str, viewport: dict, name: str = "Across requests", ready: str = "#workload-btn"):
    """A page on the tab `name` (ready: an element it shows); where the tabs do not fit (a phone) it is in the tab
    row's overflow menu."""
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(120_000)
    page.goto(url)
    tab, overflow = page.get_by_role("tab", name=name, exact=True), page.locator(".overflow-menu button")
    expect(tab.or_(overflow).first).to_be_visible()  # a tab's content is drawn once it is opened
    for _ in range(10):  # Gradio moves tabs into the menu as the page lays out: try whichever is shown now
        try:
            if tab.is_visible():
                tab.click(timeout=3_000)
            else:
                overflow.first.click(timeout=3_000)
                page.locator(".overflow-dropdown button", has_text=name).click(timeout=3_000)
            break
        except PlaywrightTimeoutError:
            page.keyboard.press("Escape")
    expect(page.locator(ready)).to_be_visible()
    return page


def test_a_workload_fills_both_drafters_request_by_request_at_1280x800(app):
    browser, url = app
    page = open_tab(browser, url, LAPTOP)
    page.locator("#workload-name input").click()
    page.get_by_role("option", name=f"{WORKLOAD}:").click()
    page.locator("#workload-btn").click()
    expect(page.locator("#workload-status")).to_contain_text("Workload finished.", timeout=600_000)
    expect(page.locator("#workload-table .virtual-row")).to_have_count(6)  # Gradio 6 draws rows as divs
    expect(page.locator("#workload-summary")).to_contain_text("on the 5 after it")
    expect(page.locator("#workload-summary")).to_contain_text("same text on every request")
    for plot in ("#workload-per-forward", "#workload-acceptance"):
        expect(page.locator(f"{plot} .legendtext")).to_have_count(2)  # suffix decoding and prompt lookup
    assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"]
    page.evaluate("document.querySelector('#workload-summary').scrollIntoView({block: 'start'})")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "workload-1280x800.png"))
    page.close()


def test_projector_mode_enlarges_the_explanation(app):
    browser, url = app
    page = open_tab(browser, url, LAPTOP)
    size = "() => parseFloat(getComputedStyle(document.querySelector('#workload-intro p')).fontSize)"
    normal = page.evaluate(size)
    page.evaluate("() => document.body.classList.add('projector')")  # what ?projector=1 and its toggle do
    assert page.evaluate(size) >= max(18, 1.2 * normal)
    page.close()


def test_on_a_phone_nothing_scrolls_sideways_and_run_is_reachable(app):
    browser, url = app
    page = open_tab(browser, url, PHONE)
    expect(page.locator("#workload-btn")).to_be_attached()
    page.locator("#workload-btn").scroll_into_view_if_needed()
    assert on_screen(page, page.locator("#workload-btn"))
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.close()
