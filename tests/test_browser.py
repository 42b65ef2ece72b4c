"""The app in a real browser (Debian's chromium, headless), on the bundled pair.

One page is shared by the tests below, in order: run a fixed-seed example, look at the tokens and the
plots, open the inspector, save the README's screenshot, then try a bad model name, a tiny sweep and Stop.
"""
import pytest
from playwright.sync_api import expect, sync_playwright

from specdec.ui.launch import ROOT, app_process

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOT = ROOT / "assets" / "screenshot.png"
EXAMPLE = "prose · T=0.7"  # fixed seed: the same tokens every time
expect.set_options(timeout=120_000)  # runs share 2 CPU cores with whatever else is running


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with app_process(tmp_path_factory.mktemp("app") / "app.log") as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        page = browser.new_page(viewport={"width": 1440, "height": 1100})
        page.set_default_timeout(120_000)
        page.goto(url)
        page.get_by_text(EXAMPLE, exact=True).click()
        expect(page.locator("#prompt textarea")).to_have_value("The os module provides a portable way of using")
        page.locator("#run-btn").click()
        page.wait_for_selector("#gen-status:has-text('Done.')")
        yield page
        browser.close()


def test_the_example_run_shows_accepted_and_rejected_tokens_with_their_classes(page):
    assert page.locator("#tokens .tok-accepted").count() > 0
    assert page.locator("#tokens .tok-rejected").count() > 0
    assert page.locator("#tokens .step-mark").count() > 1


def test_metric_cards_show_a_measured_speedup(page):
    expect(page.locator("#cards [data-metric=speedup] .value")).to_contain_text("×")


def test_plotly_plots_are_drawn(page):
    for plot in ("#plot-acceptance", "#plot-lengths", "#plot-throughput", "#plot-memory"):
        expect(page.locator(f"{plot} .js-plotly-plot")).to_be_visible()


def test_clicking_a_rejected_token_opens_the_inspector_on_it(page):
    page.locator("#tokens .tok-rejected:not(.tok-unchecked)").first.click()
    expect(page.locator("#inspect-details")).to_contain_text("min(1, p/q)")
    expect(page.locator("#inspect-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#replay .tok-step-current")).to_have_count(1)


def test_screenshot_for_the_readme(page):
    page.set_viewport_size({"width": 1440, "height": 1900})
    page.locator("#tokens .tok-rejected:not(.tok-unchecked)").first.click()
    expect(page.locator("#inspect-plot .js-plotly-plot")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 50_000
    page.set_viewport_size({"width": 1440, "height": 1100})


def test_an_unknown_model_shows_an_error_and_keeps_the_output_on_screen(page):
    tokens_before = page.locator("#tokens .tok").count()
    page.get_by_text("Other model (name or path)").click()
    draft_field = page.get_by_label("Draft: Hub id or local folder")
    draft_field.fill("no-such-model-anywhere")
    page.locator("#run-btn").click()
    expect(page.locator("#gen-error .error-box")).to_contain_text("no-such-model-anywhere")
    assert page.locator("#tokens .tok").count() == tokens_before
    draft_field.fill("")


def test_a_tiny_sweep_runs_and_marks_the_best_k(page):
    page.get_by_role("tab", name="Sweep").click()
    page.locator("#sweep-ks").get_by_role("textbox").fill("1-2")
    page.locator("#sweep-temps").get_by_role("textbox").fill("0")
    tokens = page.locator("#sweep-tokens input[type=number]")
    tokens.fill("16")
    tokens.press("Enter")
    page.locator("#sweep-btn").click()
    expect(page.locator("#sweep-best")).to_contain_text("best measured K=")
    expect(page.locator("#sweep-speedup .js-plotly-plot")).to_be_visible()
    expect(page.locator("#sweep-heatmap .js-plotly-plot")).to_be_visible()


def set_number(page, label: str, value: int) -> None:
    field = page.locator(f"input[aria-label='number input for {label}']")
    field.fill(str(value))
    field.press("Enter")


def test_stop_ends_a_long_run_and_keeps_its_tokens(page):
    page.get_by_role("tab", name="Generate").click()
    page.get_by_text("code · fibonacci · greedy", exact=True).click()
    set_number(page, "K (draft tokens per step)", 1)  # many short steps: a run of a few seconds
    set_number(page, "Max new tokens", 512)
    page.locator("#run-btn").click()
    page.wait_for_selector("#gen-status:has-text('Step')")
    page.locator("#stop-btn").click()
    expect(page.locator("#gen-status")).to_contain_text("Stopped")
    assert 0 < page.locator("#tokens .tok-step .tok").count() < 512
