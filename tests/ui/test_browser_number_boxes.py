"""A number typed outside its box's range, in a real browser (Debian's chromium, headless) at 1280×800: one plain
line on screen naming the box and its range, the box back inside it, and no traceback in the server log, below the
range and above it."""
import pytest
from playwright.sync_api import expect, sync_playwright

from specdec.ui.launch import app_process
from tests.ui.test_browser import launch_chromium

K_BOX = "input[aria-label='number input for K (draft tokens per step)']"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    log = tmp_path_factory.mktemp("app") / "app.log"
    with app_process(log, "--no-preload") as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(180_000)
        page.goto(url)
        expect(page.locator(K_BOX)).to_be_visible()
        yield page, log
        browser.close()


@pytest.mark.parametrize("typed, kept", [("0", "1"), ("99", "16")], ids=["below", "above"])
def test_k_outside_its_range_gets_one_plain_note_and_no_server_traceback(served, typed, kept):
    page, log = served
    box = page.locator(K_BOX)
    box.fill(typed)
    box.press("Tab")
    note = page.locator(".toast-body", has_text=f"K (draft tokens per step) must be from 1 to 16 (got {typed}).")
    expect(note).to_have_count(1)
    expect(box).to_have_value(kept)
    expect(note).to_have_count(0, timeout=15_000)  # it goes: no stale note stays behind for the next one
    assert "Traceback" not in log.read_text()
