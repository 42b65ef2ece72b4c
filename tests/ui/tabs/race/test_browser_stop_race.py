"""Stop is tied to its run, in a real browser (Debian's chromium, headless) on the bundled lab pair: a Stop
clicked just before Run whose request reaches the server only after the new run started leaves that run
alone (the race found while writing the browser tests). A Stop during a run stopping it is tests/ui/test_browser.py's
test_stop_ends_a_long_run_and_keeps_its_tokens (on a model slow enough that the click lands mid-run: on a 2-core
Zen 1 under the suite's load a click here waited for the streaming page until this short lab-pair run had ended)."""
import httpx
from playwright.sync_api import expect

from tests.ui.test_browser import LAB_PAIR, browser_page, choose_example, set_number, use_models

expect.set_options(timeout=180_000)  # runs share 2 CPU cores with whatever else is running


def stop_endpoint(url: str) -> int:
    """The Generate tab Stop's event index (fn_index in the queue requests)."""
    return next(d["id"] for d in httpx.get(f"{url}config", timeout=30).json()["dependencies"]
                if d.get("api_name") == "stop")


def is_stop(request, index: int) -> bool:
    return "queue/join" in request.url and (request.post_data_json or {}).get("fn_index") == index


def test_stop_then_run_at_once_lets_the_new_run_complete(tmp_path_factory):
    with browser_page(tmp_path_factory, "--no-preload") as page:
        index, held = stop_endpoint(page.url), []
        page.route("**/queue/join*", lambda route: held.append(route) if is_stop(route.request, index)
                   else route.continue_())  # Stop requests wait until the test lets them through
        choose_example(page, "code · fibonacci · greedy")
        use_models(page, *LAB_PAIR)
        status = page.locator("#gen-status")
        page.locator("#run-btn").click()
        expect(status).to_contain_text("Done.")

        page.locator("#stop-btn").click()  # pressed after the first run ended …
        set_number(page, "Max new tokens", 256)  # (another configuration: measured afresh, for seconds)
        page.locator("#run-btn").click()  # … and Run right after it
        expect(status).to_contain_text("Measuring the speedup")  # the new run is under way on the server
        assert len(held) == 1
        with page.expect_response(lambda response: is_stop(response.request, index)):
            held.pop().continue_()  # the Stop reaches the server only now
        page.wait_for_timeout(500)
        expect(status).to_contain_text("Measuring the speedup", timeout=1_000)  # it landed while the run went on
        expect(status).to_contain_text("Done.")
        expect(status).not_to_contain_text("Stopped")

