"""Model cards (README.md per folder) and the figures table in docs/models.md.

Every figure is computed here from the shipped weights (see ``measure``) or read from the
training record (``training.json``) that the build wrote next to the weights.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from training.lab_family.configs import TARGET
from training.lab_family.corpus import LICENCE, SOURCE_DESCRIPTION
from training.lab_family.export import STORAGE_DTYPE, load_training_record
from training.lab_family.measure import (
    PROMPTS,
    AcceptanceRow,
    K,
    acceptance_figures,
    greedy_samples,
    heldout_figures,
    model_folders,
)

CARDS_COMMAND = "python -m training cards"
DOCS_START, DOCS_END = "<!-- figures:start -->", "<!-- figures:end -->"
ROLE_TEXT = {
    "lab-target": "the target model of the SpecDec Lab family (verifies the drafts' proposals)",
    "lab-draft-small": "a draft trained on the corpus only (same data and objective as the target)",
    "lab-draft-distilled": ("a draft with lab-draft-small's architecture, distilled from lab-target's "
                            "output distributions (KL to the target's soft labels on corpus text)"),
    "lab-draft-tiny": "a clearly smaller corpus-only draft",
}
ACCEPTANCE_NOTE = (
    f"Measured with the project's engine (`specdec.generate`) against lab-target at K={K}, float32 on CPU, "
    "pooled over the prompts: acceptance rate = accepted draft tokens / drafted tokens; mean tokens per "
    "target forward = new tokens / target decode forwards (prefill excluded), so it counts the target's "
    "own token of each step and target-only decoding scores about 1.00 (the Spec-Bench convention). "
    "Temperature 1.0 uses seeds 0..n-1, one per prompt."
)


def folder_megabytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6


def model_table(record: dict, folder: Path) -> str:
    shape = record.get("shape", {})
    rows = [
        ("Parameters", f"{record.get('parameters', 0):,}"),
        ("Layers", shape.get("layers")),
        ("Hidden size (width)", shape.get("hidden")),
        ("Attention heads", f"{shape.get('heads')} (head dim {shape.get('hidden', 0) // max(1, shape.get('heads', 1))})"),
        ("MLP size", shape.get("intermediate")),
        ("Vocabulary", f"{record.get('tokenizer_vocab')} (byte-level BPE shared by the family, EOS `<|endoftext|>`)"),
        ("Context", f"1024 positions (trained on {record.get('seq_len')}-token windows)"),
        ("Weights on disk", f"{str(STORAGE_DTYPE).replace('torch.', '')} safetensors, config dtype float32 "
                            f"(loaders upcast); folder {folder_megabytes(folder):.1f} MB"),
    ]
    return table(("", ""), rows)


def training_table(record: dict) -> str:
    train = record.get("training", {})
    rows = [
        ("Objective", record.get("objective")),
        ("Tokens seen", f"{train.get('tokens_seen', 0):,}"),
        ("Optimiser steps", f"{train.get('steps')} x batch {record.get('batch')} x {record.get('seq_len')} tokens"),
        ("Schedule", f"AdamW (0.9, 0.95), weight decay 0.1, peak LR {train.get('lr')}, linear warmup, "
                     "cosine to 10%, grad clip 1.0"),
        ("Data mix", f"{1 - record.get('prose_weight', 0):.0%} code windows, {record.get('prose_weight', 0):.0%} "
                     "prose windows (prose upsampled)"),
        ("Seed", train.get("seed")),
        ("Training time", f"{train.get('train_seconds')} s on {record.get('profile')} profile, "
                          f"torch {record.get('torch')}, 2 CPU threads"),
        ("Final training loss", train.get("final_train_loss")),
    ]
    return table(("", ""), rows)


def corpus_section(record: dict) -> str:
    splits = record.get("corpus", {}).get("splits", {})
    rows = [(split, f"{info['documents']:,}", f"{info['chars']:,}") for split, info in splits.items()]
    return (f"{SOURCE_DESCRIPTION}.\n\nLicence: {LICENCE}. Obtained offline from the Python installation "
            "itself; held-out split chosen by a CRC32 of each file's path (or topic name).\n\n"
            + table(("Split", "Documents", "Characters"), rows))


def heldout_table(losses: dict) -> str:
    rows = [(kind, f"{v['loss']:.3f}", f"{v['perplexity']:.1f}", f"{v['tokens']:,}") for kind, v in losses.items()]
    return table(("Held-out split", "Loss (nats/token)", "Perplexity", "Tokens"), rows)


def acceptance_table(rows: list[AcceptanceRow]) -> str:
    body = [(r.draft, r.kind, "greedy" if r.temperature == 0 else f"T={r.temperature:g}", r.prompts,
             r.new_tokens, f"{r.acceptance_rate:.3f}", f"{r.tokens_per_target_forward:.2f}") for r in rows]
    return table(("Draft", "Prompt kind", "Decoding", "Prompts", "New tokens", "Acceptance rate",
                  "Mean tokens per target forward"), body)


def samples_section(samples: list[tuple[str, str]]) -> str:
    parts = []
    for prompt, completion in samples:
        parts.append("```text\n" + (prompt + completion).replace("```", "'''") + "\n```")
    return "Greedy (plain `transformers` `generate(do_sample=False)`, float32, 64 new tokens); the prompt " \
           "is included at the start.\n\n" + "\n\n".join(parts)


def table(header: tuple, rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(str(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_card(folder: Path, record: dict, losses: dict, rows: list[AcceptanceRow],
                samples: list[tuple[str, str]]) -> str:
    name = folder.name
    mine = rows if name == TARGET else [r for r in rows if r.draft == name]
    title = "Speculative decoding: every bundled draft against this target" if name == TARGET \
        else "Speculative decoding against lab-target"
    return "\n\n".join([
        "---\nlicense: other\nlicense_name: psf-2.0\nlibrary_name: transformers\npipeline_tag: text-generation\n"
        "tags:\n- speculative-decoding\n- specdec-lab\n---",
        f"# {name}\n\n{name} is {ROLE_TEXT.get(name, 'a model of the SpecDec Lab family')}: a `LlamaForCausalLM` "
        "trained from scratch by SpecDec Lab on CPU. It is a teaching model, small enough to ship in the "
        "repository and run anywhere; do not expect more than short, locally plausible Python and prose.",
        "## Model\n\n" + model_table(record, folder),
        "## Training\n\n" + training_table(record),
        "## Corpus and licence\n\n" + corpus_section(record),
        "## Held-out loss (from the shipped weights)\n\n" + heldout_table(losses),
        f"## {title} (K={K})\n\n{ACCEPTANCE_NOTE}\n\n" + acceptance_table(mine),
        "## Greedy samples\n\n" + samples_section(samples),
        "## Rebuild\n\nThe whole family (tokenizer, target, drafts, distillation) is rebuilt by\n\n"
        f"```bash\n{record.get('command')}\n```\n\nand this card (every figure in it) by\n\n"
        f"```bash\n{CARDS_COMMAND}\n```",
    ]) + "\n"


def family_figures(folders: list[Path], losses: dict, rows: list[AcceptanceRow]) -> str:
    model_rows = []
    for folder in folders:
        record = load_training_record(folder)
        train = record.get("training", {})
        model_rows.append((folder.name, f"{record.get('parameters', 0):,}", f"{train.get('tokens_seen', 0):,}",
                           f"{train.get('train_seconds')}", f"{folder_megabytes(folder):.1f}",
                           f"{losses[folder.name]['code']['loss']:.3f} / {losses[folder.name]['code']['perplexity']:.1f}",
                           f"{losses[folder.name]['prose']['loss']:.3f} / {losses[folder.name]['prose']['perplexity']:.1f}"))
    total = sum(folder_megabytes(f) for f in folders)
    return "\n\n".join([
        table(("Model", "Parameters", "Tokens seen", "Train s", "MB on disk", "Held-out code loss / ppl",
               "Held-out prose loss / ppl"), model_rows),
        f"Whole family on disk: {total:.1f} MB.",
        ACCEPTANCE_NOTE,
        acceptance_table(rows),
    ])


def update_docs(docs_path: Path, figures: str) -> None:
    if not docs_path.exists():
        return
    text = docs_path.read_text()
    block = f"{DOCS_START}\n{figures}\n{DOCS_END}"
    pattern = re.compile(re.escape(DOCS_START) + ".*?" + re.escape(DOCS_END), re.S)
    if pattern.search(text):
        docs_path.write_text(pattern.sub(lambda _: block, text))


def write_all_cards(family_dir: Path, prompts_per_kind: int = 8, max_new_tokens: int = 96,
                    docs_path: Path | None = None) -> None:
    folders = model_folders(family_dir)
    if not folders or folders[0].name != TARGET:
        raise SystemExit(f"no {TARGET} folder in {family_dir}")
    prompts_per_kind = min(prompts_per_kind, *(len(p) for p in PROMPTS.values()))
    losses = heldout_figures(folders)
    rows = acceptance_figures(folders, prompts_per_kind, max_new_tokens)
    for folder in folders:
        card = render_card(folder, load_training_record(folder), losses[folder.name], rows, greedy_samples(folder))
        (folder / "README.md").write_text(card)
        print(f"wrote {os.path.relpath(folder / 'README.md')}")
    if docs_path is not None:
        update_docs(docs_path, family_figures(folders, losses, rows))
    print(family_figures(folders, losses, rows))
