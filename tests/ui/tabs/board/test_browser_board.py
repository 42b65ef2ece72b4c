"""The Class board in Chromium, on the app as a Space runs it (SPACE_ID set): two browser sessions run the same
example, the board pools both runs (one shared measurement), it fits 1280x800, the projector mode and a 390-wide
phone, and only the operator key resets it."""
import os

from specdec.ui.launch import app_process

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.ui.tabs.whatif.test_browser_whatif import space_env
from tests.ui.test_browser import choose_example, launch_chromium

EXAMPLE = "code · fibonacci · greedy"  # the lab pair: fast on any CPU
KEY = "teacher-secret"
expect.set_options(timeout=240_000)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    os.environ["SPECDEC_OPERATOR_KEY"] = KEY
    try:
        with space_env(), app_process(tmp_path_factory.mktemp("app") / "app.log", "--no-preload") as url, \
                sync_playwright() as pw:
            browser = launch_chromium(pw)
            yield browser, url
            browser.close()
    finally:
        os.environ.pop("SPECDEC_OPERATOR_KEY", None)


def student(browser, url):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(240_000)
    page.goto(url)
    choose_example(page, EXAMPLE)
    page.locator("#run-btn").click()
    return page


def open_board(page):
    """The last tab: in the tab bar where it fits, else behind "More tabs" (the bar settles after it draws)."""
    expect(page.get_by_role("tab", name="Generate", exact=True)).to_be_visible()
    page.wait_for_timeout(500)
    more = page.get_by_role("button", name="More tabs")
    if more.is_visible():
        more.click()
        page.get_by_role("button", name="Class board", exact=True).click()
    else:
        page.get_by_role("tab", name="Class board", exact=True).click()
    return page.locator("#class-board-table")


@pytest.fixture(scope="module")
def two_runs(app):
    browser, url = app
    pages = [student(browser, url), student(browser, url)]  # two browser sessions, pressing Run together
    for page in pages:
        expect(page.locator("#gen-status")).to_contain_text("Done.")
    return pages


def test_the_board_pools_the_runs_of_two_browser_sessions(two_runs):
    board = open_board(two_runs[0])
    expect(board).to_contain_text("2 runs pooled")
    row = board.locator("tr", has_text="Example 4")
    expect(row.locator("td").nth(2)).to_have_text("2")
    expect(row.locator("td").nth(5)).to_contain_text("×")


def test_both_sessions_got_the_same_shared_figure(two_runs):
    statuses = [page.locator("#gen-status").inner_text() for page in two_runs]
    figures = [s.split("Speedup ")[1].split(" (timed")[0] for s in statuses]
    assert figures[0] == figures[1] and all("shared" in s for s in statuses)


@pytest.mark.parametrize("size,projector", [((1280, 800), False), ((1280, 800), True), ((390, 844), False)])
def test_the_board_fits_the_screen(app, two_runs, size, projector):
    browser, url = app
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(url + ("?projector=1" if projector else ""))
    board = open_board(page)
    expect(board).to_contain_text("2 runs pooled")  # opening the tab brings it
    box = board.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= size[0] + 1
    table = board.locator("table").bounding_box()
    assert table["height"] > 40 and table["width"] > 0
    page.close()


def test_only_the_operator_key_resets_the_board(app, two_runs):
    page = two_runs[1]
    board = open_board(page)
    page.locator("#board-reset-box").click()
    page.locator("#board-key input").fill("wrong")
    page.locator("#board-reset").click()
    expect(page.locator("#board-note")).to_contain_text("not the operator key")
    expect(board).to_contain_text("2 runs pooled")
    page.locator("#board-key input").fill(KEY)
    page.locator("#board-reset").click()
    expect(page.locator("#board-note")).to_contain_text("was reset")
    expect(board).to_contain_text("No runs yet")
