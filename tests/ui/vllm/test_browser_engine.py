"""The sidebar's engine choice in a real browser (Debian's chromium, headless): choosing "vLLM server" routes
Generate, Race and Sweep to the URLs given (here one where nothing answers: each tab shows one clear message and
the app keeps serving), the Sweep tab says what a vLLM sweep costs, and choosing the lab's engine again brings the
lab back. Runs on real vLLM servers: test_vllm_server.py."""
import socket

from playwright.sync_api import expect

from tests.ui.test_browser import browser_page

expect.set_options(timeout=180_000)  # runs share 2 CPU cores with whatever else is running


def unused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def open_engine(page) -> None:
    """The engine choice sits last in the sidebar, collapsed: open it."""
    if not page.locator("#engine").is_visible():
        page.get_by_text("Engine: SpecDec Lab or a vLLM server").click()


def test_the_vllm_engine_choice_routes_every_timed_tab_to_the_given_servers(tmp_path_factory):
    lead, baseline = unused_url(), unused_url()
    with browser_page(tmp_path_factory, "--no-preload") as page:
        open_engine(page)
        page.locator("#engine").get_by_text("vLLM server", exact=True).click()
        # a person pastes a URL and moves on (Tab): the app records a field on its change and again on leaving it
        # (in CI under load a pasted baseline's change once reached the app without its value, and nothing followed)
        url_field = page.locator("#vllm-url textarea, #vllm-url input").first
        url_field.fill(lead)
        url_field.press("Tab")
        expect(page.locator("#engine-note")).to_contain_text(f"Generate runs on the vLLM server at {lead}")
        baseline_field = page.locator("#vllm-baseline-url textarea, #vllm-baseline-url input").first
        baseline_field.fill(baseline)
        baseline_field.press("Tab")
        expect(page.locator("#engine-note")).to_contain_text(f"measured against {baseline}")

        page.locator("#run-btn").click()
        expect(page.locator("#gen-error")).to_contain_text(f"cannot reach a vLLM server at {lead}")

        page.get_by_role("tab", name="Race").click()
        page.locator("#race-btn").click()
        expect(page.locator("#race-error")).to_contain_text(f"cannot reach a vLLM server at {lead}")

        page.get_by_role("tab", name="Sweep").click()
        expect(page.locator("#sweep-vllm-note")).to_contain_text("starts one vLLM server per draft and K")
        page.locator("#sweep-btn").click()  # the baseline is checked before anything is exported or started
        expect(page.locator("#sweep-error")).to_contain_text(f"cannot reach a vLLM server at {baseline}")

        page.locator("#engine").get_by_text("SpecDec Lab engine", exact=True).click()
        expect(page.locator("#engine-note")).to_contain_text("python -m specdec vllm serve")
