"""Gathers `python -m specdec load --json` runs made on one machine into the measurement shipped with the app
(assets/measurements/vllm-load.json: the "Under load" view's data where no vLLM server is configured), labelled with
the machine, the commands, the date and the notebook entry that reports it; prints the dynamic rule read from it
and each run's table.

    python experiments/ship_load_measurement.py RUN.json [RUN.json ...] --notebook docs/notebook/DATE-ENTRY.md \
        [--out assets/measurements/vllm-load.json] [--csv FILE]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from specdec.vllm.load_report import csv_text, table_lines
from specdec.vllm.load_shipped import SHIPPED, combine, label_problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--notebook", required=True)
    parser.add_argument("--out", default=str(SHIPPED))
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    runs = [json.loads(Path(path).read_text()) for path in args.runs]
    data = combine(runs, args.notebook)
    problems = label_problems(data)
    if problems:
        raise SystemExit(f"error: {'; '.join(problems)}")
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    if args.csv:
        Path(args.csv).write_text(csv_text(runs))
    for run in runs:
        print("\n".join(table_lines(run)), end="\n\n")
    for method, rule in data["dynamic_rule"].items():
        choices = ", ".join(f"{c['concurrency']}: {'off' if not c['k'] else (c['method'] + ' K=' + str(c['k']))}"
                            for c in rule["choices"])
        print(f"dynamic rule, {method}: {choices}" + (f"  (--k-by-batch {rule['k_by_batch']})"
                                                         if rule.get("k_by_batch") else ""))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
