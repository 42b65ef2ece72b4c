"""Predicted vs measured c and v(K), K = 1..8, on this machine, for the default pair (SmolLM2-135M-Instruct +
prompt lookup) and SmolLM2-135M-Instruct + smollm2-135m-draft, through the "Why this speedup?" tab's own
callback (no browser).

The cost model (specdec/measure/cost_model.py) predicts from the models' shapes and this machine's measured
bandwidth, matmul peak and overhead (specdec/measure/device_presets.py); the measurement is a Sweep over K at T = 0 with the
real runners (c = draft time per token / target-only step, v(K) = a speculative step's target side / a
target-only step, medians over timed pairs). The prompt is the app's "rewrite" example, where prompt lookup
finds text to copy, so most of its steps draft the full K.

    python experiments/measure_cost_model.py [--ks 1-8] [--tokens 48]
"""
from __future__ import annotations

import argparse
import time

from specdec.measure.cost_model import compare
from specdec.measure.device_presets import THIS_MACHINE, measure_this_machine
from specdec.models import presets
from specdec.ui.cost_prediction import prediction
from specdec.ui.session import Session
from specdec.ui.tabs.cost import callbacks as cost_tab
from specdec.ui.tabs.generate.callbacks import Lab

PROMPT = ("Rewrite this paragraph in plain English, keeping its meaning:\n\nThe committee, having deliberated at "
          "considerable length on the matter of the budget, ultimately resolved to approve the proposal, subject to "
          "the condition that all expenditures be reported to the board on a quarterly basis.")
DRAFTS = ("prompt-lookup", "smollm2-135m-draft")
TOLERANCE = 0.30


def measure_pair(lab: Lab, target: str, draft: str, args):
    final = list(cost_tab.measure(lab, Session(), args.prompt, False, target, draft, "", "", 4, 0.0, 1.0, 0,
                                  args.tokens, 0, True, THIS_MACHINE, "auto", args.ks,
                                  progress=lambda *a, **k: None))[-1]
    if final.get("error"):
        raise SystemExit(final["error"])
    measured = final["state"]
    return measured, prediction(target, draft, 4, measure_this_machine(), "auto", measured, measure_peak=True)


def fmt(x, pattern="{:.3f}") -> str:
    return "–" if x is None else pattern.format(x)


def report(measured, pred) -> dict:
    rows = compare(pred, measured.rows)
    print(f"\n{measured.target} + {measured.draft} ({pred.dtype}, prompt {measured.context} tokens, "
          f"α = {fmt(rows[0].alpha if rows else None, '{:.2f}')})")
    print(" K   c pred   c meas  c err   v pred  v meas  v err   speedup pred  meas (95% interval)  draft share")
    by_k = {r.k: r for r in measured.rows}
    for x in rows:
        share = by_k[x.k].proposal_share
        interval = "" if x.speedup_low is None else f" ({x.speedup_low:.2f}–{x.speedup_high:.2f})"
        print(f"{x.k:2d}   {x.c_predicted:6.3f}   {fmt(x.c_measured):>6}  {fmt(x.c_error, '{:+.0%}'):>5}   "
              f"{x.v_predicted:6.2f}  {fmt(x.v_measured, '{:.2f}'):>6}  {fmt(x.v_error, '{:+.0%}'):>5}   "
              f"{fmt(x.speedup_predicted, '{:.2f}'):>12}  {fmt(x.speedup_measured, '{:.2f}')}{interval:<14}"
              f"  {fmt(share, '{:.0%}')}")
    print(f"target-only step: predicted {pred.decode.time_s * 1e3:.1f} ms ({pred.decode.bound}-bound, overhead "
          f"{pred.decode.overhead_share:.0%}); measured {fmt(measured.step_s and measured.step_s * 1e3, '{:.1f}')} ms "
          "(median over every timed pair)")
    return {"v": [x.v_error for x in rows if x.v_error is not None],
            "c": [x.c_error for x in rows if x.c_error is not None],
            "c_abs": [x.c_predicted - x.c_measured for x in rows if x.c_measured is not None]}


def verdict(name: str, errors: dict) -> None:
    v, c, gap = errors["v"], errors["c"], errors["c_abs"]
    within = lambda es: f"within {TOLERANCE:.0%} at {sum(abs(e) <= TOLERANCE for e in es)} of {len(es)} K values"
    worst = lambda es: fmt(max(es, key=abs) if es else None, "{:+.0%}")
    c_text = (f"c {within(c)} (worst {worst(c)})" if c else "c predicted 0 (no network), so no relative error")
    print(f"{name}: v(K) {within(v)} (mean |error| {fmt(sum(map(abs, v)) / len(v) if v else None, '{:.0%}')}, "
          f"worst {worst(v)}); {c_text}; c predicted − measured, in target steps: "
          f"{fmt(min(gap, default=None), '{:+.3f}')} to {fmt(max(gap, default=None), '{:+.3f}')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="1-8")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--target", default=presets.DEFAULT_TARGET)
    parser.add_argument("--drafts", default=",".join(DRAFTS))
    parser.add_argument("--prompt", default=PROMPT)
    args = parser.parse_args()

    lab = Lab()
    start = time.perf_counter()
    device = measure_this_machine()
    print(f"{device.label}: {device.bandwidth / 1e9:.1f} GB/s, {device.peak('float32') / 1e9:.1f} GFLOP/s float32, "
          f"overhead {device.forward_overhead_s * 1e3:.2f} ms per forward + {device.layer_overhead_s * 1e3:.3f} ms "
          f"per layer ({device.source})")
    print("linear layers, seconds per weight byte by rows: " + ", ".join(
        f"M={rows}: {s * 1e9:.3f} ns ({2 * rows / 4 / s / 1e9:.1f} GFLOP/s)"
        for rows, s in device.row_curves["float32"]))
    results = {}
    for draft in args.drafts.split(","):
        results[draft] = report(*measure_pair(lab, args.target, draft.strip(), args))
    print()
    for draft, errors in results.items():
        verdict(f"{args.target} + {draft}", errors)
    print(f"({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()
