"""Time from clicking Run to the first coloured token, in a real browser.

Starts `python app.py` on a free port (it preloads and warms up the default pair), waits for the
preload, opens the page in Debian's chromium (headless) and clicks Run several times with the
default prompt and settings. The clock runs inside the page: performance.now() at the click, and
again when a MutationObserver sees the first token span of the new run.

    python experiments/measure_ui_latency.py [--runs 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from specdec.ui.launch import app_process

from playwright.sync_api import sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
CLICK_TO_FIRST_TOKEN_JS = """
() => new Promise((resolve) => {
  const out = document.querySelector('#tokens');
  out.querySelector('.tok-out').innerHTML = '';        // forget the previous run's tokens
  const obs = new MutationObserver(() => {
    if (out.querySelector('.tok-step .tok')) { obs.disconnect(); resolve(performance.now() - t0); }
  });
  obs.observe(out, {childList: true, subtree: true, characterData: true});
  const t0 = performance.now();
  document.querySelector('#run-btn').click();
})
"""


def wait_for_preload(log: Path, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while "preloaded" not in log.read_text() and "preloading the default pair failed" not in log.read_text():
        if time.monotonic() > deadline:
            raise TimeoutError("the app did not finish preloading")
        time.sleep(0.5)


def measure(url: str, runs: int) -> list[float]:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(180_000)
        page.goto(url)
        page.wait_for_selector("#run-btn")
        latencies = []
        for i in range(runs):
            ms = page.evaluate(CLICK_TO_FIRST_TOKEN_JS)
            # by the first token the status already left the previous run's "Done.": wait for this run's
            page.wait_for_selector("#gen-status:has-text('Done.')")
            latencies.append(ms / 1000)
            print(f"run {i + 1}: click -> first coloured token {ms:.0f} ms", flush=True)
        browser.close()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    log = Path(tempfile.mkdtemp(prefix="specdec-latency-")) / "app.log"
    with app_process(log) as url:
        wait_for_preload(log)
        latencies = measure(url, args.runs)
    summary = {"runs": len(latencies), "first_s": round(latencies[0], 3),
               "median_s": round(statistics.median(latencies), 3), "max_s": round(max(latencies), 3)}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
