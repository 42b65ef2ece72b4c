"""K schedules in the Sweep, in a real browser (Debian's chromium, headless), on the bundled lab pair: the tab's
"K schedules" control, and a sweep of constant K against the heuristic schedule drawing one line for each."""
import pytest
from playwright.sync_api import expect

from tests.ui.test_browser import LAB_PAIR, browser_page, headers_fit, pick, sweep_drafts, sweep_settings, use_models

expect.set_options(timeout=180_000)  # runs share 2 CPU cores with whatever else is running


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with browser_page(tmp_path_factory, "--no-preload") as page:
        use_models(page, *LAB_PAIR)
        page.get_by_role("tab", name="Sweep").click()
        yield page


def test_the_sweep_tab_has_a_k_schedules_control_set_to_constant(page):
    control = page.locator("#sweep-schedules")
    expect(control).to_contain_text("K schedules")
    expect(control.locator(".token")).to_have_text(["constant"])


def test_a_sweep_of_two_schedules_draws_a_line_for_each_and_compares_them(page):
    sweep_drafts(page, LAB_PAIR[1])
    pick(page, "K schedules", "heuristic")
    sweep_settings(page, "1-2", "0", 8)
    page.locator("#sweep-btn").click()
    expect(page.locator("#sweep-status")).to_contain_text("Sweep finished: 4 of 4 points measured.")
    legend = page.locator("#sweep-speedup .js-plotly-plot .legend")
    expect(legend).to_contain_text("constant, T=0 measured")
    expect(legend).to_contain_text("heuristic, T=0 measured")
    expect(page.locator("#sweep-best")).to_contain_text("heuristic schedule: best largest K=")
    expect(page.locator("#sweep-best")).to_contain_text("vs best constant K=")


def test_the_tables_schedule_column_fits_with_the_others(page):
    headers = [h.strip() for h in page.locator("#sweep-table thead th").all_inner_texts()]
    assert headers[:2] == ["draft", "schedule"]
    expect(page.locator("#sweep-table tbody")).to_contain_text("heuristic")
    headers_fit(page, "#sweep-table")
