"""`python -m specdec bench --vs llama.cpp`: the lab and llama.cpp on the same GGUF files, prompts, token counts and
thread count, interleaved (specdec/llamacpp/compare.py).

Engines: for each --formats entry (q4_1: the fetched file as published; q8_0, f16, f32: written from it, gguf_files.py),
the lab's target-only on that file (q4_1 and q8_0 run the file's blocks; f16 is the lab's float path, float16 from
Q4_1; f32 has no lab row), llama-server's target-only on it and, with --llama-bench, llama-bench's tg<N>; then, on the first format, the
lab's speculative runs (--draft a,b at each --k) and llama.cpp's (--llamacpp-spec: its n-gram types, and draft:K,
the zoo's draft model exported with llama.cpp's converter, drafting K tokens a step).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from specdec.cli.shared import UsageError, prompt_ids

DEFAULT_SPECS = "ngram-simple,ngram-map-k,ngram-mod,ngram-cache,draft:2,draft:3,draft:4"
NGRAM_TYPES = ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
LAB_FORMATS = ("q4_1", "q8_0", "f16")  # f16: the lab's float path (float16 copies of the weights from Q4_1)


def add_arguments(bench) -> None:
    bench.add_argument("--vs", choices=["llama.cpp"], default=None, help="llama.cpp side by side on the same GGUF "
                       "file, prompts, token counts and threads (built by `python -m specdec llamacpp setup`)")
    bench.add_argument("--formats", default="q4_1", help="--vs: GGUF formats, comma separated: q4_1 (as published), "
                       "q8_0, f16, f32 (written from it; f32: llama.cpp's rows only); speculative rows run on the first")
    bench.add_argument("--llamacpp-spec", default=DEFAULT_SPECS, help="--vs: llama.cpp's speculative "
                       f"configurations: n-gram types ({', '.join(NGRAM_TYPES)}) and draft:K (the zoo's draft model); "
                       "none for target-only rows only")
    bench.add_argument("--llama-bench", action="store_true", help="--vs: add llama-bench's tg<N> of each format "
                       "(N: the lab's token count; one prompt)")
    bench.add_argument("--prompts-file", default=None, help="--vs: a file of prompts (one a line, or a JSON list)")
    bench.add_argument("--ks", default=None, help="--vs: draft lengths of the lab's speculative rows, comma "
                       "separated (default: --k, else 2)")


def parse_specs(text: str) -> list[tuple[str, int]]:
    """'ngram-mod,draft:3' -> [('ngram-mod', 0), ('draft-simple', 3)]."""
    specs = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part == "none":
            continue
        if part.startswith("draft:"):
            try:
                specs.append(("draft-simple", int(part.split(":", 1)[1])))
            except ValueError:
                raise UsageError(f"--llamacpp-spec: draft:K needs an integer K, got {part!r}") from None
        elif part in NGRAM_TYPES:
            specs.append((part, 0))
        else:
            raise UsageError(f"--llamacpp-spec: unknown configuration {part!r} (n-gram types: {', '.join(NGRAM_TYPES)}; "
                             "draft:K)")
    return specs


def parse_list(text: str, what: str, allowed=None) -> list[str]:
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    bad = [item for item in items if allowed is not None and item not in allowed]
    if bad or not items:
        raise UsageError(f"{what}: expected {', '.join(allowed) if allowed else 'a comma-separated list'}, got {text!r}")
    return items


def run_versus(args) -> int:
    from contextlib import ExitStack

    from specdec.cli.generate import read_prompts
    from specdec.llamacpp import build, compare, export, server
    from specdec.models.gguf_files import ensure_gguf
    from specdec.models.loading import load_model
    from specdec.planning.run import load_drafter

    reason = build.unavailable_reason()
    if reason:
        raise UsageError(reason)
    formats = parse_list(args.formats, "--formats", ("q4_1", "q8_0", "f16", "f32"))
    if formats[0] not in LAB_FORMATS:
        raise UsageError(f"--formats: the first format runs the lab's rows too: one of {', '.join(LAB_FORMATS)}")
    specs = parse_specs(args.llamacpp_spec)
    ks = [int(k) for k in parse_list(args.ks or str(args.k or 2), "--ks")] if args.draft else []
    drafts = parse_list(args.draft, "--draft") if args.draft else []
    threads = args.threads or os.cpu_count() or 1
    name = args.target
    targets = {fmt: load_model(name, dtype=fmt if fmt != "f16" else "float32") for fmt in formats if fmt in LAB_FORMATS}
    if "f16" in targets:
        targets["f16"].kernels = "lab"  # the float path as `auto` runs it where the kernels build: float16 from Q4_1
    first = targets[formats[0]]
    texts = read_prompts(args.prompts_file) if args.prompts_file else [args.prompt]
    prompts = [prompt_ids(_with_prompt(args, text), first) for text in texts]
    counts = [len(compare.LabEngine("", first).run(ids, args.max_new_tokens).token_ids) for ids in prompts]
    files = {fmt: ensure_gguf(name, fmt, print) for fmt in formats}
    log = build.root() / "servers.log"
    with ExitStack() as stack:
        engines, lab_spec, cpp_spec = [], [], []
        for fmt in formats:
            label = fmt.upper()
            if fmt in targets:
                engines.append(compare.LabEngine(f"lab target-only [{label}]", targets[fmt]))
            cpp = stack.enter_context(server.LlamaServer(files[fmt], threads, log=log))
            engines.append(compare.ServerEngine(f"llama.cpp target-only [{label}]", cpp, _file_label(fmt)))
            if args.llama_bench:
                engines.append(compare.BenchEngine(
                    f"llama-bench tg [{label}]",
                    lambda n, path=files[fmt]: server.llama_bench(path, threads, n), _file_label(fmt)))
        for draft in drafts:
            drafter = load_drafter(draft, first)
            for k in ks:
                lab_spec.append(f"lab {draft} K={k} [{formats[0].upper()}]")
                engines.append(compare.LabEngine(lab_spec[-1], first, drafter, k))
        for spec_type, k in specs:
            draft_file = export.draft_gguf(Path(first.source)) if spec_type == "draft-simple" else None
            label = f"draft model K={k}" if draft_file else spec_type
            config = server.SpecConfig(label, spec_type, draft_file, k)
            cpp = stack.enter_context(server.LlamaServer(files[formats[0]], threads, config, log=log))
            cpp_spec.append(f"llama.cpp {label} [{formats[0].upper()}]")
            engines.append(compare.ServerEngine(cpp_spec[-1], cpp, _file_label(formats[0])))
        report = compare.run_versus(engines, prompts, counts, lambda rows: comparisons(rows, formats, lab_spec,
                                                                                       cpp_spec, args.llama_bench),
                                    args.repeats, threads)
    print(compare.format_report(report))
    text = json.dumps(asdict(report))
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    return 0


def _with_prompt(args, text: str):
    from argparse import Namespace

    return Namespace(**{**vars(args), "prompt": text, "prompt_ids": None})


def _file_label(fmt: str) -> str:
    from specdec.models.dtypes import block_weights_label

    return block_weights_label(fmt)


def comparisons(rows, formats: list[str], lab_spec: list[str], cpp_spec: list[str], llama_bench: bool) -> list:
    """The pairs the report compares: per format, the lab's target-only against llama.cpp's (end to end) and
    llama-bench's (decoding); each side's speculative rows against llama.cpp's target-only; the lab's fastest
    speculative row against llama.cpp's fastest (chosen from these rounds' medians)."""
    pairs = []
    for fmt in (f for f in formats if f in LAB_FORMATS):
        label = fmt.upper()
        pairs.append((f"lab target-only [{label}]", f"llama.cpp target-only [{label}]", False))
        if llama_bench:
            pairs.append((f"lab target-only [{label}]", f"llama-bench tg [{label}]", True))
    base = f"llama.cpp target-only [{formats[0].upper()}]"
    pairs += [(name, base, False) for name in lab_spec + cpp_spec]
    pairs += [(name, f"lab target-only [{formats[0].upper()}]", False) for name in lab_spec]
    rate = {row.engine: row.tokens_per_s for row in rows}
    if lab_spec and cpp_spec:
        pairs.append((max(lab_spec, key=rate.get), max(cpp_spec, key=rate.get), False))
    return pairs
