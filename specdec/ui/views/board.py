"""The Class board as a table: one row per exercise (or example) and configuration, numbers right-aligned, every
figure with its meaning in the header; a plain function of specdec/serving/class_board.py's rows."""
from __future__ import annotations

import time
from html import escape

from specdec.serving.class_board import BoardRow

STYLE = ("<style>.class-board{overflow-x:auto}.class-board table{border-collapse:collapse;width:100%;"
         "font-size:1.05rem}.class-board th,.class-board td{padding:.35rem .6rem;border-bottom:1px solid #ccc;"
         "text-align:left}.class-board td.num{text-align:right;font-variant-numeric:tabular-nums}"
         ".class-board .empty{padding:1rem;font-size:1.1rem}</style>")
COLUMNS = ("Exercise or example", "Configuration", "Runs", "Acceptance rate", "Tokens per target forward",
           "Measured speedup", "Best K (pooled sweeps)")


def _num(x, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _speedup(row: BoardRow) -> str:
    if row.speedup is None:
        return "not measured yet"
    return f"{row.speedup:.2f}× ({row.measured_runs} measured)"


def _best_k(row: BoardRow) -> str:
    if row.best_k is None:
        return "–"
    return f"K={row.best_k}: {row.best_k_speedup:.2f}× ({row.sweeps} sweep{'s' if row.sweeps != 1 else ''})"


def board_html(rows: list[BoardRow], reset_at: float | None = None) -> str:
    """The board as a table (numbers right-aligned, every figure with its meaning in the header)."""
    since = (f" Since the teacher's reset at {time.strftime('%H:%M:%S UTC', time.gmtime(reset_at))}."
             if reset_at else "")
    if not rows:
        return (f'{STYLE}<div class="class-board" id="class-board-table"><div class="empty">No runs yet on this '
                f"app. Press Run on an exercise: every run appears here.{since}</div></div>")
    total = sum(r.runs for r in rows)
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = "".join(
        f"<tr><td>{escape(r.label)}</td><td>{escape(r.config)}</td><td class='num'>{r.runs}</td>"
        f"<td class='num'>{_num(r.acceptance_rate, '.0%')}</td><td class='num'>{_num(r.tokens_per_forward, '.2f')}</td>"
        f"<td class='num'>{_speedup(r)}</td><td>{_best_k(r)}</td></tr>" for r in rows)
    return (f'{STYLE}<div class="class-board" id="class-board-table"><p>{total} run{"s" if total != 1 else ""} '
            f"pooled on this app.{since}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")
