"""The "Under load" tab in Chromium, on the app as a Space runs it (SPACE_ID set: no vLLM URL entry, so the shipped
measurement): at 1280×800, at 1920×1080 with ?projector=1 and on a 390×844 phone, its three plots render inside the
window's width, the crossover sentence and the measurement's labels show, and nothing scrolls sideways. Each
viewport's screenshot is written to docs/screenshots/ (under-load-*.png)."""

from specdec.vllm.load_shipped import read_measurement

from playwright.sync_api import expect

from tests.ui.tabs.workload.test_browser_workload import app, open_tab  # noqa: F401 (app: the Space's app, a fixture)
from tests.ui.test_browser_first_screen import LAPTOP, PHONE, SHOTS, box

PROJECTOR = {"width": 1920, "height": 1080}
PLOTS = ("#load-throughput", "#load-latency", "#load-speedup")
expect.set_options(timeout=120_000)


def check_view(page, width: int, shot: str) -> None:
    """The labels, the crossover sentence and each plot drawn with a box inside the window's width."""
    shipped = read_measurement()
    expect(page.locator("#load-source")).to_contain_text("Shipped measurement")
    expect(page.locator("#load-source")).to_contain_text(shipped["machine"])
    expect(page.locator("#load-source")).to_contain_text(shipped["date"])
    expect(page.locator("#load-crossover")).to_contain_text("K=")
    expect(page.locator("#load-crossover")).to_contain_text("Speedup by concurrency")
    for plot in PLOTS:
        drawn = page.locator(f"{plot} .js-plotly-plot .main-svg")
        expect(drawn.first).to_be_attached()
        drawn.first.scroll_into_view_if_needed()
        b = box(page.locator(plot))
        assert b["left"] >= 0 and b["right"] <= width and b["bottom"] - b["top"] > 150, (plot, b)
        expect(page.locator(f"{plot} .legendtext").first).to_be_attached()
    assert page.locator("#load-speedup .legendtext", has_text="measured").count() == 1
    crossover = page.locator("#load-crossover")
    crossover.scroll_into_view_if_needed()
    b = box(crossover)
    assert b["left"] >= 0 and b["right"] <= width and b["bottom"] > b["top"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.locator("#load-summary").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"under-load-{shot}.png"))


def test_the_tab_draws_its_plots_and_crossover_at_1280x800(app):
    browser, url = app
    page = open_tab(browser, url, LAPTOP, "Under load", "#load-summary")
    check_view(page, LAPTOP["width"], "1280x800")
    page.close()


def test_the_tab_draws_its_plots_and_crossover_on_a_projector(app):
    browser, url = app
    page = open_tab(browser, url + "?projector=1", PROJECTOR, "Under load", "#load-summary")
    expect(page.locator("body.projector")).to_be_attached()
    check_view(page, PROJECTOR["width"], "projector-1920x1080")
    size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#load-crossover')).fontSize)")
    assert size >= 20
    page.close()


def test_the_tab_draws_its_plots_and_crossover_on_a_phone(app):
    browser, url = app
    page = open_tab(browser, url, PHONE, "Under load", "#load-summary")
    check_view(page, PHONE["width"], "390x844")
    page.close()
