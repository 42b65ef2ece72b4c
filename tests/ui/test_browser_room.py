"""The app in the rooms a class uses it in (issue 63), in a real browser (Debian's chromium, headless), checked by
element boxes and computed font sizes: a laptop at 1280×800 (the result above the fold after Run, every tab in one
row, the listed defects fixed, one colour per fate), a projector at 1920×1080 with ?projector=1 (what the back row
reads at its sizes, fine print hidden, nothing truncated, the toggle showing the mode) and a phone at 390×844 (Run,
the prompt, Drafter, K and Temperature on the first screen, every tab reachable, no toolbar over a plot's title).
Each room runs the same fixed-seed example on the bundled lab pair; its screenshots go to docs/screenshots/."""
from specdec.ui.launch import ROOT, app_process
from specdec.ui.layout import TABS
from specdec.ui.views.fates import FATE_COLORS

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.ui.test_browser import EXAMPLE, choose_example, launch_chromium

SHOTS = ROOT / "docs" / "screenshots"
LAPTOP, PROJECTOR, PHONE = {"width": 1280, "height": 800}, {"width": 1920, "height": 1080}, {"width": 390, "height": 844}
PLOTS = ("#plot-acceptance", "#plot-lengths", "#plot-throughput", "#plot-memory", "#inspect-plot")
BOX = "e => { const b = e.getBoundingClientRect(); return {left: b.left, top: b.top, right: b.right, bottom: b.bottom}; }"
FONT_PX = "e => parseFloat(getComputedStyle(e).fontSize)"
# Everything drawn over a plot's title: the block's label, its buttons (Gradio's and the SVG one), plotly's toolbar.
OVER_TITLE = """block => { const title = block.querySelector('.gtitle'); if (!title) return ['no title'];
  const t = title.getBoundingClientRect(), over = [];
  block.querySelectorAll('[data-testid=block-label], button, .modebar-container').forEach(e => {
    const b = e.getBoundingClientRect(), s = getComputedStyle(e);
    if (!b.width || !b.height || s.visibility === 'hidden' || s.display === 'none') return;
    if (b.left < t.right && t.left < b.right && b.top < t.bottom && t.top < b.bottom) over.push(e.outerHTML.slice(0, 80));
  }); return over; }"""
# The fill a bar or a legend swatch is painted with: its colour, or its pattern's background colour.
FILLS = """plot => { const colour = path => { const fill = getComputedStyle(path).fill;
    const id = (fill.match(/#([^")]+)"?\\)/) || [])[1];
    if (!id) return fill; const bg = document.getElementById(id).querySelector('rect');
    return bg ? getComputedStyle(bg).fill : fill; };
  const bars = plot.data.filter(d => d.type === 'bar').map(d => d.name);
  const drawn = Array.from(plot.querySelectorAll('.barlayer .trace')).map(t => t.querySelector('.point path'));
  const legend = {}; plot.querySelectorAll('.legend .traces').forEach(t => {
    const swatch = t.querySelector('.legendpoints path');
    if (swatch) legend[t.querySelector('.legendtext').textContent] = colour(swatch); });
  return bars.map((name, i) => ({name, bars: drawn[i] ? colour(drawn[i]) : null, legend: legend[name]})); }"""
SPLIT_WORDS = """table => Array.from(table.querySelectorAll('tbody td')).filter(td => {
  const text = td.innerText.trim(); if (!text || /\\s/.test(text)) return false;
  const r = document.createRange(); r.selectNodeContents(td);
  return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.top))).size > 1;
}).map(td => td.innerText)"""
TRUNCATED = """() => Array.from(document.querySelectorAll('input, [role=tab]')).filter(e => {
  const b = e.getBoundingClientRect(); if (!b.width || !b.height || getComputedStyle(e).visibility === 'hidden') return false;
  return e.scrollWidth > e.clientWidth + 1; }).map(e => e.value || e.textContent)"""
SMALL_PLOT_TEXT = """block => Array.from(block.querySelectorAll('svg text')).filter(t => t.textContent.trim()
  && t.getBoundingClientRect().width > 0 && parseFloat(getComputedStyle(t).fontSize) < 18).map(t => t.textContent)"""


def rgb(color: str) -> str:
    return "rgb({}, {}, {})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)))


def box(locator) -> dict:
    return locator.first.evaluate(BOX)


def on_first_screen(page, locator) -> bool:
    b, size = box(locator), page.viewport_size
    return b["top"] >= 0 and b["left"] >= 0 and b["bottom"] <= size["height"] and b["right"] <= size["width"]


def run_example(page) -> None:
    choose_example(page, EXAMPLE)
    page.locator("#run-btn").click()
    expect(page.locator("#gen-status .verdict-big")).to_be_visible()
    expect(page.locator("#plot-lengths .js-plotly-plot")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with app_process(tmp_path_factory.mktemp("app") / "app.log", "--no-preload") as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        SHOTS.mkdir(parents=True, exist_ok=True)
        yield browser, url
        browser.close()


def room(app, viewport: dict, query: str = ""):
    """A page on the app, once the page's load events (the tour, a link, the last run) have filled the prompt."""
    browser, url = app
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(180_000)
    page.goto(url + query)
    expect(page.locator("#run-btn")).to_be_visible()
    expect(page.locator("#prompt [data-testid=status-tracker]:not(.hide)")).to_have_count(0)
    expect(page.locator("#prompt textarea")).not_to_have_value("")
    return page


@pytest.fixture(scope="module")
def laptop(app):
    page = room(app, LAPTOP)
    run_example(page)
    yield page
    page.close()


@pytest.fixture(scope="module")
def projector(app):
    page = room(app, PROJECTOR, "?projector=1")
    run_example(page)
    yield page
    page.close()


@pytest.fixture(scope="module")
def phone(app):
    page = room(app, PHONE)
    page.evaluate("window.scrollTo(0, 0)")
    yield page
    page.close()


# --- a laptop, 1280×800 ------------------------------------------------------------------------------------------
def test_after_run_at_1280x800_the_verdict_and_the_first_coloured_tokens_are_on_the_first_screen(laptop):
    assert on_first_screen(laptop, laptop.locator("#gen-status .verdict-big")), box(laptop.locator(".verdict-big"))
    first_token = laptop.locator("#tokens .tok-out .tok").first
    assert on_first_screen(laptop, first_token), box(first_token)
    laptop.screenshot(path=str(SHOTS / "laptop-1280x800.png"))


def test_every_tab_is_in_one_row_in_view_at_1280(laptop):
    tabs = laptop.get_by_role("tab")
    assert tabs.all_inner_texts() == [label for label, _, _ in TABS]
    boxes = [box(tabs.nth(i)) for i in range(tabs.count())]
    assert len({round(b["top"]) for b in boxes}) == 1, boxes
    assert all(b["right"] <= LAPTOP["width"] for b in boxes), boxes


def test_the_lengths_legend_swatches_are_their_bars_colours_and_each_fates_colour(laptop):
    fills = laptop.locator("#plot-lengths .js-plotly-plot").evaluate(FILLS)
    assert all(f["bars"] == f["legend"] for f in fills), fills
    by_name = {f["name"]: f["bars"] for f in fills}
    assert by_name["accepted drafts"] == rgb(FATE_COLORS["accepted"])
    assert by_name["target's token: resampled"] == rgb(FATE_COLORS["resampled"])


def test_each_fates_text_mark_is_its_plot_colour(laptop):
    for fate in ("accepted", "resampled", "bonus", "rejected"):
        token = laptop.locator(f"#tokens .tok-{fate}").first
        assert token.evaluate("e => getComputedStyle(e).textDecorationColor") == rgb(FATE_COLORS[fate]), fate


def test_no_label_or_button_covers_a_plots_title_at_1280(laptop):
    expect(laptop.locator("#inspect-plot .js-plotly-plot")).to_be_visible()
    for plot in PLOTS:
        laptop.locator(plot).hover()
        assert laptop.locator(plot).evaluate(OVER_TITLE) == [], plot


def test_the_acceptance_plots_title_is_whole(laptop):
    plot = laptop.locator("#plot-acceptance .js-plotly-plot")
    title = plot.locator(".gtitle")
    assert title.text_content() == "Acceptance by draft position"
    assert box(title)["right"] <= box(plot.locator("svg.main-svg"))["right"]


def test_the_steps_table_breaks_no_token_mid_word(laptop):
    assert laptop.locator("#steps-table table").first.evaluate(SPLIT_WORDS) == []


def test_no_empty_report_box_before_a_report_exists(laptop):
    expect(laptop.locator("#report-btn")).to_be_visible()
    expect(laptop.locator("#report-file")).to_be_hidden()


def test_the_preset_and_every_dropdown_show_their_whole_value(laptop):
    expect(laptop.locator("#preset input")).to_have_value("SmolLM2-135M-Instruct")
    assert laptop.evaluate(TRUNCATED) == []


# --- a projector, 1920×1080 --------------------------------------------------------------------------------------
def test_projector_link_ticks_the_toggle_and_sets_the_mode(projector):
    expect(projector.locator("body.projector")).to_have_count(1)
    expect(projector.locator("#projector input")).to_be_checked()


def test_projector_tokens_verdict_cards_and_legend_at_back_row_sizes(projector):
    sizes = {selector: projector.locator(selector).first.evaluate(FONT_PX) for selector in (
        "#tokens .tok-out", "#gen-status .verdict-big", "#cards .card .value", "#cards .card .label",
        "#live .tok-legend")}
    assert sizes["#tokens .tok-out"] >= 28 and sizes["#gen-status .verdict-big"] >= 40, sizes
    assert min(sizes.values()) >= 18, sizes


def test_projector_plot_text_is_at_least_18px(projector):
    for plot in PLOTS:
        assert projector.locator(plot).evaluate(SMALL_PLOT_TEXT) == [], plot


def test_projector_hides_the_fine_print_and_truncates_nothing(projector):
    for selector in ("#gen-status .status-line", "#cards .card .sub", ".explain-note", "#app-head .tagline"):
        expect(projector.locator(selector).first).to_be_hidden()
    assert projector.evaluate(TRUNCATED) == []
    projector.screenshot(path=str(SHOTS / "projector-1920x1080.png"))


def test_the_projector_toggle_turns_the_mode_off_and_on(projector):
    projector.locator("#projector input").uncheck()
    expect(projector.locator("body.projector")).to_have_count(0)
    projector.locator("#projector input").check()
    expect(projector.locator("body.projector")).to_have_count(1)


# --- a phone, 390×844 ----------------------------------------------------------------------------------------------
def test_on_a_phone_run_the_prompt_drafter_k_and_temperature_are_on_the_first_screen(phone):
    for selector in ("#run-btn", "#prompt textarea", "#draft-compact", "#k-compact", "#temperature-compact"):
        assert on_first_screen(phone, phone.locator(selector)), (selector, box(phone.locator(selector)))
    expect(phone.locator(".sidebar.open")).to_have_count(0)
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    phone.screenshot(path=str(SHOTS / "phone-390x844.png"))


def test_on_a_phone_the_compact_k_sets_the_sidebars_k(phone):
    phone.locator("#k-compact input").fill("6")
    phone.locator("#k-compact input").press("Enter")
    expect(phone.locator("input[aria-label='number input for K (draft tokens per step)']")).to_have_value("6")
    phone.locator("#k-compact input").fill("4")
    phone.locator("#k-compact input").press("Enter")


def test_on_a_phone_every_tab_is_on_screen_and_opens(phone):
    tabs = phone.get_by_role("tab")
    for i in range(tabs.count()):
        assert on_first_screen(phone, tabs.nth(i)), (tabs.nth(i).inner_text(), box(tabs.nth(i)))
    phone.get_by_role("tab", name="Class board").click()
    expect(phone.get_by_role("tab", name="Class board")).to_have_attribute("aria-selected", "true")
    phone.get_by_role("tab", name="Generate").click()


def test_on_a_phone_no_toolbar_covers_a_plots_title(phone):
    run_example(phone)
    for plot in PLOTS[:4]:
        phone.locator(plot).hover()
        assert phone.locator(plot).evaluate(OVER_TITLE) == [], plot
