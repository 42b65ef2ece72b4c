"""The "Is it exact?" check through the API, on the default pair and the app's default settings, timed.

Starts `python app.py --no-preload` on a free port, then calls `lossless` with the default prompt, target and draft
(SmolLM2-135M-Instruct + prompt lookup), K = 4, max new tokens 64, T = 1.0 and 20,000 draws per side: once with the
real verifier (cold: the target loads in this call), again with it (warm), then with the default broken verifier.
Prints, per call, the wall time seen by the client, the p-value, the total variation and the greedy verdict.

    python experiments/measure_lossless.py [--draws 20000] [--tokens 1]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from specdec.exactness.verifier_faults import BROKEN_DEFAULT, REAL
from specdec.models import presets
from specdec.ui.launch import app_process
from specdec.ui.layout import EXAMPLES

from gradio_client import Client

OUTPUTS = ["cleanup", "greedy", "verdict", "plot", "result", "status", "error"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20_000)
    parser.add_argument("--tokens", type=int, default=1, choices=(1, 2))
    args = parser.parse_args()
    params = dict(prompt=EXAMPLES[0][0], clean_whitespace=True, target=presets.DEFAULT_TARGET,
                  draft=presets.DEFAULT_DRAFT, target_custom="", draft_custom="", k=4, temperature=1.0, top_p=1.0,
                  top_k=0, max_new_tokens=64, seed=0, k_schedule="constant", chat=True, draws=args.draws,
                  tokens=args.tokens)
    with tempfile.TemporaryDirectory() as tmp, app_process(Path(tmp) / "app.log", "--no-preload") as url:
        client = Client(url, verbose=False)
        for label, verifier in (("real, cold", REAL), ("real, warm", REAL), ("broken, warm", BROKEN_DEFAULT)):
            start = time.perf_counter()
            out = dict(zip(OUTPUTS, client.predict(**params, verifier=verifier, api_name="/lossless")))
            wall = time.perf_counter() - start
            result = out["result"] or {}
            sampling, greedy = result.get("sampling") or {}, result.get("greedy") or {}
            print(f"{label:13s} {verifier!r}: {wall:5.1f} s  p = {sampling.get('p_value', float('nan')):.3g}  "
                  f"TV = {sampling.get('tv', float('nan')):.4f}  (sampling part {sampling.get('seconds', 0):.1f} s, "
                  f"{sampling.get('draws')} draws)  greedy identical: {greedy.get('identical')}"
                  + (f"  ERROR: {out['error']}" if out["error"] else ""), flush=True)


if __name__ == "__main__":
    main()
