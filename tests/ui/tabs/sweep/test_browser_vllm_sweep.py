"""The Sweep on vLLM clicked in a real browser (Debian's chromium, headless) against a real vLLM server: the app
starts a vLLM server for the setting, measures it against the baseline server and stops it, and the page shows the
measured row. Opt-in (SPECDEC_VLLM_SWEEP_TEST=1) like test_vllm_server.py's sweeps: the baseline's start and the
setting's take minutes on a 2-core CPU. The callback's own checks against scripted servers: test_ui_vllm_tabs.py."""
import os

from specdec.vllm import launcher

import pytest
from playwright.sync_api import expect

from tests.ui.test_browser import browser_page, sweep_drafts, sweep_settings
from tests.ui.vllm.test_browser_engine import open_engine
from tests.vllm.test_vllm_server import PROMPTS, _venv_or_skip, smollm2_spec

pytestmark = pytest.mark.skipif(not os.environ.get("SPECDEC_VLLM_SWEEP_TEST"),
                                reason="the vLLM sweep starts servers of its own (4-8 minutes on a 2-core CPU): set "
                                       "SPECDEC_VLLM_SWEEP_TEST=1 to run it")


@pytest.fixture(scope="module")
def baseline():
    record = launcher.start(_venv_or_skip(), smollm2_spec())
    try:
        launcher.wait_healthy([record])
        yield record
    finally:
        launcher.stop_all([record])
        assert launcher.group_members(record["pid"]) == []


def test_a_sweep_clicked_in_the_browser_starts_measures_and_stops_a_real_vllm_server(baseline, tmp_path_factory):
    before = {r["pid"] for r in launcher.records()}
    with browser_page(tmp_path_factory, "--no-preload", timeout_ms=900_000) as page:
        open_engine(page)
        page.locator("#engine").get_by_text("vLLM server", exact=True).click()
        for field_id in ("#vllm-url", "#vllm-baseline-url"):  # Generate's server does not matter to the Sweep
            field = page.locator(f"{field_id} textarea, {field_id} input").first
            field.fill(baseline["url"])
            field.press("Tab")
        expect(page.locator("#engine-note")).to_contain_text(f"measured against {baseline['url']}")
        page.locator("#prompt textarea").fill(PROMPTS[0])
        page.get_by_role("tab", name="Sweep").click()
        sweep_drafts(page, "prompt-lookup")
        sweep_settings(page, "2", "0", 24)
        page.locator("#sweep-btn").click()
        expect(page.locator("#sweep-status")).to_contain_text("vLLM sweep finished: 1 of 1 points measured.",
                                                              timeout=900_000)
        row = page.locator("#sweep-table tbody tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("vllm ngram")
        # one draft: the plot's lines are named by temperature (and the best K marked)
        expect(page.locator("#sweep-speedup .js-plotly-plot .legend")).to_contain_text("T=0 measured")
        expect(page.locator("#sweep-best")).to_contain_text("K=2")
    assert {r["pid"] for r in launcher.records()} == before  # the app stopped the server it started
