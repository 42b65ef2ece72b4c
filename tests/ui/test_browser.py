"""The app in a real browser (Debian's chromium, headless), on the bundled lab pair.

One page is shared by the tests below, in order: run a fixed-seed example, look at the tokens, the cards,
the plots and the tables, open the inspector, save the README's screenshot, then try a mistyped model
name, sweeps (a tiny one, then a stopped one), races (a whole one, then a stopped one) and Stop.
"""
import contextlib
import re
import shutil

from specdec.ui.launch import ROOT, app_process
from specdec.ui.layout import EXAMPLE_FIELDS, EXAMPLE_LABELS, EXAMPLES

import pytest
import torch
from playwright.sync_api import expect, sync_playwright
from transformers import LlamaConfig, LlamaForCausalLM

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
EXAMPLE = "prose · T=0.7"  # fixed seed: the same tokens every time
LAB_PAIR = ("lab-target", "lab-draft-distilled")
expect.set_options(timeout=180_000)  # runs share 2 CPU cores with whatever else is running

LINES_OF = """th => { const r = document.createRange(); r.selectNodeContents(th.querySelector('.header') || th);
  return new Set(Array.from(r.getClientRects()).map(b => Math.round(b.top))).size; }"""  # a header's text lines
HEADER_FITS = """th => { const text = th.querySelector('.header') || th;
  return text.scrollWidth <= text.clientWidth; }"""  # not cut short (with an ellipsis) by its column
CLIPPED_TICKS = """plot => { const svg = plot.querySelector('svg.main-svg').getBoundingClientRect();
  return Array.from(plot.querySelectorAll('.xtick text')).filter(t => {
    const b = t.getBoundingClientRect(); return b.bottom > svg.bottom + 1 || b.top < svg.top - 1; }).length; }"""


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)


@contextlib.contextmanager
def browser_page(tmp_path_factory, *flags: str, timeout_ms: int = 180_000, **page_options):
    """`python app.py *flags` in a child process and a headless chromium page on it (1440 x 1100)."""
    with app_process(tmp_path_factory.mktemp("app") / "app.log", *flags) as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        page = browser.new_page(viewport={"width": 1440, "height": 1100}, **page_options)
        page.set_default_timeout(timeout_ms)
        page.goto(url)
        yield page
        browser.close()


def choose_example(page, label: str) -> None:
    """Clicks an example chip and waits until the settings it sets are on screen: the chip's values come back from
    the server, so a Run pressed before they arrive sends the settings shown before (and a value typed before they
    arrive is overwritten)."""
    values = dict(zip(EXAMPLE_FIELDS, EXAMPLES[EXAMPLE_LABELS.index(label)]))
    page.get_by_text(label, exact=True).click()
    expect(page.locator("#prompt textarea")).to_have_value(values["prompt"])
    expect(page.get_by_label("Target", exact=True)).to_have_value(values["target"])
    expect(page.get_by_label("Draft", exact=True)).to_have_value(values["draft"])
    for name, label_text in (("k", "K (draft tokens per step)"), ("max_new_tokens", "Max new tokens")):
        expect(page.locator(f"input[aria-label='number input for {label_text}']")).to_have_value(str(values[name]))


def use_models(page, target: str, draft: str) -> None:
    """The "name or path" fields win over the dropdowns: the tests run on the bundled lab pair."""
    accordion = page.get_by_text("Other model (name or path)")
    if not page.get_by_label("Target: Hub id or local folder").is_visible():
        accordion.click()
    page.get_by_label("Target: Hub id or local folder").fill(target)
    page.get_by_label("Draft: Hub id or local folder").fill(draft)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with browser_page(tmp_path_factory, "--no-preload") as page:
        choose_example(page, EXAMPLE)
        use_models(page, *LAB_PAIR)
        page.locator("#run-btn").click()
        page.wait_for_selector("#gen-status:has-text('Done.')")
        yield page


def test_the_example_run_shows_accepted_and_rejected_tokens_with_their_classes(page):
    assert page.locator("#tokens .tok-accepted").count() > 0
    assert page.locator("#tokens .tok-rejected").count() > 0
    assert page.locator("#tokens .step-mark").count() > 1


def test_the_speedup_card_shows_a_measured_figure_with_its_repeats(page):
    card = page.locator("#cards [data-metric=speedup]")
    expect(card.locator(".value")).to_contain_text("×")
    expect(card.locator(".sub")).to_contain_text("repeats")
    expect(page.locator("#gen-status")).to_contain_text("apart from the streamed run")


def test_the_cards_label_acceptance_rate_and_alpha(page):
    expect(page.locator("#cards [data-metric=acceptance]")).to_contain_text("accepted / drafted")
    expect(page.locator("#cards [data-metric=acceptance]")).to_contain_text("α (accepted / evaluated)")


def test_plotly_plots_are_drawn(page):
    for plot in ("#plot-acceptance", "#plot-lengths", "#plot-throughput", "#plot-memory"):
        expect(page.locator(f"{plot} .js-plotly-plot")).to_be_visible()


def headers_fit(page, table: str) -> None:
    headers = page.locator(f"{table} thead th")
    expect(headers.first).to_be_visible()
    names = headers.all_inner_texts()
    lines = {name: headers.nth(i).evaluate(LINES_OF) for i, name in enumerate(names)}
    fits = {name: headers.nth(i).evaluate(HEADER_FITS) for i, name in enumerate(names)}
    assert lines and max(lines.values()) == 1 and all(fits.values()), (lines, fits)


def test_the_steps_table_headers_fit_their_columns_on_one_line(page):
    headers_fit(page, "#steps-table")


def test_clicking_a_rejected_token_opens_the_inspector_on_it(page):
    page.locator("#tokens .tok-rejected:not(.tok-unchecked)").first.click()
    expect(page.locator("#inspect-details")).to_contain_text("min(1, p/q)")
    expect(page.locator("#inspect-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#replay .tok-step-current")).to_have_count(1)


def test_the_inspectors_token_labels_are_not_clipped(page):
    plot = page.locator("#inspect-plot .js-plotly-plot")
    expect(plot.locator(".xtick text").first).to_be_attached()
    assert plot.evaluate(CLIPPED_TICKS) == 0


def test_a_mistyped_model_says_unknown_model_with_the_close_match_and_keeps_the_output(page):
    tokens_before = page.locator("#tokens .tok").count()
    use_models(page, LAB_PAIR[0], "lab-draft-distiled")
    page.locator("#run-btn").click()
    error = page.locator("#gen-error .error-box")
    expect(error).to_contain_text("Unknown model 'lab-draft-distiled'")
    expect(error).to_contain_text("Did you mean lab-draft-distilled")
    expect(error).not_to_contain_text("not downloaded")
    assert page.locator("#tokens .tok").count() == tokens_before
    use_models(page, *LAB_PAIR)


def set_number(page, label: str, value: int) -> None:
    field = page.locator(f"input[aria-label='number input for {label}']")
    field.fill(str(value))
    field.press("Enter")


def sweep_settings(page, ks: str, temperatures: str, tokens: int) -> None:
    page.locator("#sweep-ks").get_by_role("textbox").fill(ks)
    page.locator("#sweep-temps").get_by_role("textbox").fill(temperatures)
    field = page.locator("#sweep-tokens input[type=number]")
    field.fill(str(tokens))
    field.press("Enter")


def pick(page, label: str, value: str) -> None:
    """Adds a value to a multiselect dropdown by typing it."""
    field = page.get_by_label(label)
    field.click()
    field.fill(value)
    field.press("Enter")


def sweep_drafts(page, *names: str) -> None:
    """The Sweep's own drafts list set to `names` (it starts empty: the sidebar's draft), each name typed in."""
    chosen = page.locator("#sweep-drafts .token-remove")
    while chosen.count():
        chosen.first.click()
    for name in names:
        pick(page, "Drafts", name)


def test_before_a_sweep_its_table_shows_its_headers_not_placeholders(page):
    page.get_by_role("tab", name="Sweep").click()
    headers = page.locator("#sweep-table thead th").all_inner_texts()
    assert "K" in [h.strip() for h in headers] and not {"1", "2", "3"} & {h.strip() for h in headers}


def test_a_tiny_sweep_marks_the_best_k_prominently_on_an_integer_k_axis(page):
    page.get_by_role("tab", name="Sweep").click()
    sweep_drafts(page, "prompt-lookup")
    sweep_settings(page, "1-3", "0", 16)
    page.locator("#sweep-btn").click()
    expect(page.locator("#sweep-status")).to_contain_text("Sweep finished: 3 of 3 points measured.")
    # Named either way: "best measured K=2 (…)", or where every K measured slower than target-only on this machine
    # (prompt lookup on prose can be), "slower here: … (best K=1: …)": the best K is named in both.
    expect(page.locator("#sweep-best .key-result")).to_contain_text(re.compile(r"best (measured )?K=\d"))
    assert float(page.locator("#sweep-best .key-result").evaluate("e => getComputedStyle(e).fontSize")[:-2]) >= 16
    plot = page.locator("#sweep-speedup .js-plotly-plot")
    expect(plot).to_be_visible()
    ticks = [t.strip() for t in plot.locator(".xtick text").all_text_contents()]
    assert ticks == ["1", "2", "3"]
    expect(page.locator("#sweep-heatmap .js-plotly-plot")).to_be_visible()


def test_the_sweep_table_headers_fit_their_columns_and_how_it_works_shows_both_forms(page):
    headers_fit(page, "#sweep-table")
    page.get_by_role("tab", name="How it works").click()
    expect(page.locator("#theory-fit")).to_contain_text("measured form")
    expect(page.locator("#theory-fit")).to_contain_text("textbook")


def point_number(text: str) -> int | None:
    found = re.search(r"Measuring point (\d+) of", text)
    return int(found.group(1)) if found else None


def test_a_stopped_sweep_says_how_many_points_it_measured_and_its_status_follows_the_progress_bar(page):
    page.get_by_role("tab", name="Sweep").click()
    # 16 points of 256 tokens: long enough to be seen mid-way however fast the machine draws (a point may pass
    # between polls; 8 points of 64 tokens ended between two polls once the plots were drawn faster)
    sweep_settings(page, "1-16", "0", 256)
    page.locator("#sweep-btn").click()
    status, progress = page.locator("#sweep-status"), page.locator("#sweep-speedup .progress-level-inner")
    expect(status).to_contain_text(re.compile(r"Measuring point ([2-9]|1[0-4]) of 16"))
    seen = []
    for _ in range(6):
        seen.append((point_number(status.inner_text()), point_number(" ".join(progress.all_inner_texts()))))
        page.wait_for_timeout(150)
    agreeing = [(s, p) for s, p in seen if s is not None and p is not None]
    assert agreeing and all(abs(s - p) <= 1 for s, p in agreeing), seen
    page.locator("#sweep-stop").click()
    expect(status).to_contain_text(re.compile(r"Sweep stopped: \d+ of 16 points measured\."))


def test_a_race_ends_with_the_measured_verdict_and_a_readable_target_only_lane(page):
    page.get_by_role("tab", name="Race").click()
    page.locator("#race-btn").click()
    summary = page.locator("#race-summary .key-result")
    expect(summary).to_contain_text("Measured speedup:", timeout=180_000)
    expect(page.locator("#race-status")).not_to_contain_text("measuring", timeout=180_000)
    assert float(summary.evaluate("e => getComputedStyle(e).fontSize")[:-2]) >= 16
    assert page.locator("#race-base .tok-target").count() > 0
    assert page.locator("#race-base .step-mark").count() == 0 and page.locator("#race-spec .step-mark").count() > 0


def test_a_stopped_race_gives_no_verdict(page, slow_model):
    # the slow model: the lab pair can finish all 512 tokens before the Stop lands (then the race is whole)
    page.get_by_role("tab", name="Generate").click()
    use_models(page, slow_model, slow_model)
    page.get_by_role("tab", name="Race").click()
    set_number(page, "K (draft tokens per step)", 1)
    set_number(page, "Max new tokens", 512)
    page.locator("#race-btn").click()
    expect(page.locator("#race-spec .tok").first).to_be_visible()
    page.locator("#race-stop").click()
    expect(page.locator("#race-summary")).to_contain_text("no verdict for a partial race")
    expect(page.locator("#race-summary")).not_to_contain_text("faster")


@pytest.fixture(scope="module")
def slow_model(tmp_path_factory):
    """A random 48-layer Llama (hidden 512, ~165M parameters, float32) on the lab tokenizer: with itself as the
    draft, 512 tokens take ~20 s on the AMX Xeon (the lab pair ~2 s), so a Stop lands mid-run even under load. (16
    layers took 6 s once `auto` measured it afresh, on bfloat16: a Stop in a loaded CI run came after the end.)"""
    lab = ROOT / "assets" / "models" / "lab-target"
    config = LlamaConfig.from_pretrained(lab)
    config.hidden_size, config.intermediate_size, config.num_hidden_layers = 512, 1536, 48
    config.num_attention_heads = config.num_key_value_heads = 8
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight[0] = 0  # end of text (id 0) never wins a greedy step: no early end
    folder = tmp_path_factory.mktemp("slow") / "slow-llama"
    model.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(lab / name, folder / name)
    return str(folder)


def test_stop_ends_a_long_run_and_keeps_its_tokens(page, slow_model):
    page.get_by_role("tab", name="Generate").click()
    choose_example(page, "code · fibonacci · greedy")
    use_models(page, slow_model, slow_model)
    set_number(page, "K (draft tokens per step)", 1)
    set_number(page, "Max new tokens", 512)
    page.locator("#run-btn").click()
    page.wait_for_selector("#tokens .tok-step .tok")  # Stop at the first streamed token, well before the end
    page.locator("#stop-btn").click()
    expect(page.locator("#gen-status")).to_contain_text("Stopped")
    assert 0 < page.locator("#tokens .tok-step .tok").count() < 512
