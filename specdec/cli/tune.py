"""`python -m specdec tune [--target …] [--refresh]`: the measured `auto` path of a model on this machine
(tuning.py), as a table with the figures behind it."""
from __future__ import annotations

from specdec.cli import shared
from specdec.runners.tuning import CONTEXT, PROBE_K, REPEATS, WIDE_ROWS, TunedPath, cache_file, rows_text, tuned_path


def format_path(path: TunedPath) -> str:
    """The record as a table: one line per candidate, the chosen one marked."""
    key = path.key
    lines = [f"model  {key['model']}", f"machine  {key['cpu']}, {key['cores']} cores, {key['device']}, torch "
             f"{key['torch']}, OMP_WAIT_POLICY {key['omp_wait_policy']}",
             f"measured {path.measured_at} in {path.measured_s:.1f} s; step = 1-token forward, "
             f"verify = {PROBE_K + 1}-token forward, wide = {WIDE_ROWS}-token forward, after {CONTEXT} tokens, "
             f"medians of {REPEATS}",
             f"  {'path':<48}{'runner':<40}{'step ms':>9}{'verify ms':>11}{'wide ms':>9}  identity"]
    for c in path.candidates:
        mark = "*" if c is path.chosen else " "
        status = f"excluded: {c.excluded}" if c.excluded else ("ok, rows exact" if c.rows_exact else "ok")
        wide = f"{c.wide_ms:>9.2f}" if c.wide_ms is not None else f"{'–':>9}"
        lines.append(f"{mark} {c.label:<48}{c.runner:<40}{c.step_ms:>9.2f}{c.verify_ms:>11.2f}{wide}  {status}")
    lines += [f"  not measured: {reason}" for reason in path.skipped]
    lines.append(f"chosen: {path.label}: {path.why}")
    if path.threads_by_rows:  # a forward of this many new tokens runs on this many threads
        lines.append(f"{rows_text(path.threads_by_rows)} (new tokens per forward: threads; the fastest per bucket)")
    return "\n".join(lines)


def add_parser(commands) -> None:
    parser = commands.add_parser("tune", help="show (--refresh: measure again) the fastest exact path `auto` chose "
                                 "for a model on this machine")
    parser.add_argument("--target", default=None, help="bundled name, fetchable name, hub id or folder "
                        "(default: the app's default target)")
    parser.add_argument("--device", default="cpu", help="cpu (the measured auto is a CPU choice)")
    parser.add_argument("--refresh", action="store_true", help="measure again, replacing the cached choice")
    parser.add_argument("--trust-remote-code", action="store_true", help="run model code from the hub (off by default)")


def run(args, out=print, err=shared.err) -> int:
    """Shows the cached choice for the target on this machine (measuring it if there is none; --refresh: always)."""
    from specdec.errors import InvalidSettingsError
    from specdec.models import presets
    from specdec.models.gguf_files import block_loaders
    from specdec.models.loading import load_model, locate, resolve_device

    device = resolve_device(args.device)
    if device.type != "cpu":
        raise InvalidSettingsError(f"tune measures CPU paths; on {device} `auto` is bfloat16 (not measured)")
    target = args.target or presets.DEFAULT_TARGET
    source, _ = locate(target, True, err)
    path = tuned_path(source, device, lambda: load_model(target, device=args.device, dtype="float32",
                                                         trust_remote_code=args.trust_remote_code, progress=err),
                      trust_remote_code=args.trust_remote_code, refresh=args.refresh, say=err,
                      blocks=block_loaders(target, source, device, lambda fmt: load_model(target, dtype=fmt,
                                                                                             progress=err)))
    out(f"target {target}")
    out(format_path(path))
    out(f"cached in {cache_file()}")
    return 0
