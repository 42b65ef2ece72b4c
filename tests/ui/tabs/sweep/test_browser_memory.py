"""Memory in a real browser (Debian's chromium, headless), on the bundled lab family: a sweep over two
drafters draws the speedup-vs-extra-memory chart with its Pareto front, and the table's memory columns."""
import pytest
from playwright.sync_api import expect

from tests.ui.test_browser import LAB_PAIR, browser_page, headers_fit, sweep_drafts, sweep_settings, use_models

expect.set_options(timeout=180_000)  # runs share 2 CPU cores with whatever else is running


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with browser_page(tmp_path_factory, "--no-preload") as page:
        use_models(page, *LAB_PAIR)
        yield page


@pytest.fixture(scope="module")
def swept(page):
    """prompt-lookup and lab-draft-small in the drafts list, at K = 1 and 4."""
    page.get_by_role("tab", name="Sweep").click()
    sweep_drafts(page, "prompt-lookup", "lab-draft-small")
    sweep_settings(page, "1, 4", "0", 16)
    page.locator("#sweep-btn").click()
    expect(page.locator("#sweep-status")).to_contain_text("Sweep finished: 4 of 4 points measured.")
    return page


def test_the_sweep_draws_speedup_against_extra_memory_with_the_pareto_front(swept):
    plot = swept.locator("#sweep-memory .js-plotly-plot")
    expect(plot).to_be_visible()
    expect(plot.locator(".g-xtitle")).to_contain_text("extra memory (MiB)")
    legend = plot.locator(".legend")
    for name in ("prompt-lookup", "lab-draft-small", "Pareto front"):
        expect(legend).to_contain_text(name)
    expect(plot.locator(".scatterlayer .textpoint")).to_have_count(4)  # "K=…" beside each point


def test_the_sweep_table_shows_extra_memory_and_the_coarse_peak_and_its_headers_fit(swept):
    headers = [h.strip() for h in swept.locator("#sweep-table thead th").all_inner_texts()]
    assert "extra" in headers and "peak Δ" in headers
    expect(swept.locator("#sweep-table tbody")).to_contain_text("KiB")
    expect(swept.locator("#sweep-table tbody")).to_contain_text("(coarse)")
    headers_fit(swept, "#sweep-table")
