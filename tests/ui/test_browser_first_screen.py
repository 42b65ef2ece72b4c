"""The first screen as a Space runs it (SPACE_ID set, no vLLM server set by an operator), in a real browser (Debian's
chromium, headless), checked by element boxes: at 1280×800 Run, Draft, K and Temperature are on screen without
scrolling and nothing about vLLM is; the sidebar follows a person's questions; after Run on the defaults the verdict
sentence is large and the inspector is open on a rejected draft; the projector mode and a 390×844 phone. Each
viewport's screenshot is written to docs/screenshots/."""
import os
import re

from specdec.ui.launch import ROOT

import pytest
from playwright.sync_api import expect

from tests.ui.test_browser import browser_page

SHOTS = ROOT / "docs" / "screenshots"
LAPTOP, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}
BOX = "e => { const b = e.getBoundingClientRect(); return {left: b.left, top: b.top, right: b.right, bottom: b.bottom}; }"
VISIBLE_VLLM = """() => Array.from(document.querySelectorAll('body *')).filter(e => {
  if (e.children.length || !/vllm/i.test(e.textContent)) return false;
  const b = e.getBoundingClientRect(), s = getComputedStyle(e);
  return b.width > 0 && b.height > 0 && b.bottom > 0 && b.top < window.innerHeight && s.visibility !== 'hidden';
}).map(e => e.textContent.slice(0, 60))"""
SPLIT_WORDS = """table => Array.from(table.querySelectorAll('tbody td')).filter(td => {
  const text = td.innerText.trim(); if (!text || /\\s/.test(text)) return false;
  const r = document.createRange(); r.selectNodeContents(td);
  return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.top))).size > 1;
}).map(td => td.innerText)"""
VERDICT = re.compile(r"^(\d+\.\d\d× faster than the target alone — 95% interval|No measurable difference|Slower: "
                     r"\d+\.\d\d×|\d+\.\d\d× the target alone's speed from)")


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """The app as a Space runs it: SPACE_ID set (a public deployment), no operator-set vLLM server."""
    saved = {name: os.environ.get(name) for name in ("SPACE_ID", "SPECDEC_VLLM_URL")}
    os.environ["SPACE_ID"], os.environ["SPECDEC_VLLM_URL"] = "specdec/lab", ""
    try:
        with browser_page(tmp_path_factory, timeout_ms=420_000) as page:
            page.set_viewport_size(LAPTOP)
            SHOTS.mkdir(parents=True, exist_ok=True)
            yield page
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


def box(locator) -> dict:
    return locator.first.evaluate(BOX)


def on_screen(page, locator) -> bool:
    b, size = box(locator), page.viewport_size
    return b["top"] >= 0 and b["left"] >= 0 and b["bottom"] <= size["height"] and b["right"] <= size["width"]


def test_at_1280x800_run_draft_k_and_temperature_are_on_screen_without_scrolling(space):
    page = space
    page.set_viewport_size(LAPTOP)
    expect(page.locator("#run-btn")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_function("document.querySelector('#preset').getBoundingClientRect().left >= 0")  # slid in
    for selector in ("#run-btn", "#draft", "#k", "#temperature"):
        assert on_screen(page, page.locator(selector)), (selector, box(page.locator(selector)))


def test_no_vllm_control_or_text_on_the_first_screen_of_a_space_without_a_server(space):
    expect(space.locator("#engine-box")).to_be_hidden()
    expect(space.locator("#engine")).to_be_hidden()
    assert space.evaluate(VISIBLE_VLLM) == []


def test_the_sidebar_asks_preset_target_draft_k_temperature_then_the_rest(space):
    tops = [box(space.locator(s))["top"] for s in ("#preset", "#preset-note", "#target", "#draft",
                                                     "#k", "#temperature")]
    assert tops == sorted(tops), tops
    rest = box(space.get_by_label("Top-p (1 = off)"))["top"]
    assert rest > tops[-1]


def test_the_preset_note_is_one_line_with_details_on_demand(space):
    note = space.locator("#preset-note")
    line = float(note.locator("p").first.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
    height = box(note.locator("p"))["bottom"] - box(note.locator("p"))["top"]
    assert height <= 3 * line  # one sentence (it wraps in a narrow sidebar), not a paragraph
    expect(space.locator("#preset-details")).to_be_hidden()
    space.get_by_text("About this pair").click()
    expect(space.locator("#preset-details")).to_contain_text("SmolLM2-135M-Instruct")
    space.get_by_text("About this pair").click()


def test_the_default_draft_is_a_named_drafter_and_auto_stays_one_choice_away(space):
    draft = space.get_by_label("Draft", exact=True)
    assert draft.input_value() != "auto" and draft.input_value().startswith("smollm2-135m-")
    expect(space.locator("#draft")).to_contain_text("model cards")


def test_the_first_screen_sketches_what_will_appear_instead_of_empty_plots(space):
    expect(space.locator("#sketch")).to_contain_text("What will appear here")
    expect(space.locator("#plot-acceptance")).to_be_hidden()
    expect(space.locator("#steps-table")).to_be_hidden()
    space.screenshot(path=str(SHOTS / "first-screen-1280x800.png"))


def test_after_run_on_the_defaults_a_large_verdict_and_the_inspector_on_a_rejected_draft(space):
    page = space
    page.locator("#run-btn").click()
    progress = page.locator("#gen-status .run-progress")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Run waits until")
    verdict = page.locator("#gen-status .verdict-big")
    expect(verdict).to_be_visible()
    assert VERDICT.match(verdict.inner_text()), verdict.inner_text()
    assert float(verdict.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 20
    expect(page.locator("#inspect-pos input")).to_have_value(re.compile("rejected"))
    expect(page.locator("#inspect-plot .js-plotly-plot")).to_be_visible()


def test_four_primary_cards_of_equal_height_and_the_rest_in_details(space):
    cards = space.locator("#cards .cards-primary > .card")
    expect(cards).to_have_count(4)
    heights = {round(box(cards.nth(i))["bottom"] - box(cards.nth(i))["top"]) for i in range(4)}
    assert len(heights) == 1, heights
    assert [cards.nth(i).get_attribute("data-metric") for i in range(4)] == [
        "speedup", "tokens_per_forward", "acceptance", "tokens_per_s"]
    expect(space.locator("#card-details [data-metric=memory]")).to_be_hidden()


def test_one_colour_per_fate_a_legend_for_plain_target_tokens_and_no_split_tokens(space):
    expect(space.locator(".tok-legend .tok-target")).to_be_visible()
    assert space.locator("#steps-table table").first.evaluate(SPLIT_WORDS) == []


def test_how_it_works_shows_the_name_placeholder(space):
    space.get_by_role("tab", name="How it works").click()
    expect(space.locator("#drafter-families")).to_contain_text("assets/drafters/<name>/README.md")
    space.get_by_role("tab", name="Generate").click()


def test_an_example_chip_sets_the_models_it_is_for(space):
    space.get_by_text("prose · T=0.7", exact=True).click()
    expect(space.get_by_label("Target", exact=True)).to_have_value("lab-target")
    expect(space.get_by_label("Draft", exact=True)).to_have_value("lab-draft-distilled")
    space.get_by_text("chat · explain (prose)", exact=True).click()
    expect(space.get_by_label("Target", exact=True)).to_have_value("smollm2-135m-instruct")


def test_projector_mode_by_url_flag_has_larger_type_and_no_fine_print(space):
    page = space.context.browser.new_page(viewport=LAPTOP)
    page.set_default_timeout(180_000)
    page.goto(space.url.split("?")[0] + "?projector=1")
    expect(page.locator("body.projector")).to_have_count(1)
    expect(page.locator("#run-btn")).to_be_visible()
    assert on_screen(page, page.locator("#run-btn"))
    size = float(page.locator("#prompt textarea").evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))
    assert size >= 18
    page.screenshot(path=str(SHOTS / "projector-1280x800.png"))
    page.close()


def test_on_a_phone_the_sidebar_starts_closed_nothing_scrolls_sideways_and_run_is_reachable(space):
    page = space.context.browser.new_page(viewport=PHONE)
    page.set_default_timeout(180_000)
    page.goto(space.url.split("?")[0])
    expect(page.locator("#run-btn")).to_be_visible()
    expect(page.locator(".sidebar.open")).to_have_count(0)
    assert box(page.locator("#prompt"))["left"] >= 0
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.locator("#run-btn").scroll_into_view_if_needed()
    assert on_screen(page, page.locator("#run-btn"))
    page.close()  # its screenshot: test_browser_room.py (the phone's first screen, its compact row)
