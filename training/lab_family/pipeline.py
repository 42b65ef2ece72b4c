"""Build the whole family: corpus -> tokenizer -> target -> drafts -> distilled draft -> folders.

Everything is written to a staging folder first and moved into place only when every model
is finished, so the models already in ``out_dir`` stay usable while a build runs.
"""
from __future__ import annotations

import platform
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from training.lab_family.configs import Profile, RunSpec
from training.lab_family.corpus import LICENCE, SOURCE_DESCRIPTION, Corpus, build_corpus
from training.lab_family.data import WindowSampler, encode_documents, heldout_windows
from training.lab_family.evaluate import loss_report
from training.lab_family.export import count_parameters, create_model, save_model_folder
from training.lab_family.loop import Schedule, corpus_loss, make_distill_loss, train
from training.lab_family.tokenizer import eos_id, train_tokenizer

Log = Callable[[str], None]


def print_log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def tokenizer_texts(corpus: Corpus) -> list[str]:
    """Training text for the tokenizer: train splits only, prose counted twice like in training."""
    return corpus.code_train + corpus.prose_train * 2


def encode_splits(tok, corpus: Corpus) -> dict[str, np.ndarray]:
    eos = eos_id(tok)
    return {split: encode_documents(tok, docs, eos) for split, docs in vars(corpus).items()}


def schedule_for(run: RunSpec, profile: Profile) -> Schedule:
    steps = max(1, run.tokens // (profile.batch * profile.seq_len))
    return Schedule(steps=steps, lr=run.lr, warmup_steps=min(run.warmup_steps, max(1, steps // 10)))


def sampler_for(streams: dict[str, np.ndarray], profile: Profile, seed: int) -> WindowSampler:
    return WindowSampler(
        streams=(streams["code_train"], streams["prose_train"]),
        weights=(1.0 - profile.prose_weight, profile.prose_weight),
        batch=profile.batch, seq_len=profile.seq_len, seed=seed,
    )


def train_one(run: RunSpec, index: int, profile: Profile, streams, tok, trained: dict,
              seed: int, log: Log) -> tuple[torch.nn.Module, dict]:
    run_seed = seed * 1000 + index
    seed_everything(run_seed)
    model = create_model(run.shape, profile.vocab_size, eos_id(tok), run_seed)
    loss_fn = make_distill_loss(trained[run.teacher]) if run.teacher else corpus_loss
    sampler = sampler_for(streams, profile, run_seed)
    log(f"{run.name}: {count_parameters(model):,} parameters, {run.tokens:,} tokens"
        + (f", distilled from {run.teacher}" if run.teacher else ""))
    stats = train(model, sampler.next_batch, schedule_for(run, profile), loss_fn, log, run.name)
    return model, {**stats, "seed": run_seed, "lr": run.lr}


def build_record(run: RunSpec, model, stats: dict, profile: Profile, corpus: Corpus, tok,
                 heldout: dict, command: str) -> dict:
    return {
        "name": run.name,
        "role": run.role,
        "objective": (f"distillation: KL(target || draft) on {run.teacher}'s soft labels over corpus text"
                      if run.teacher else "next-token cross-entropy on the corpus"),
        "teacher": run.teacher,
        "shape": asdict(run.shape),
        "parameters": count_parameters(model),
        "profile": profile.name,
        "batch": profile.batch,
        "seq_len": profile.seq_len,
        "prose_weight": profile.prose_weight,
        "training": stats,
        "heldout_at_training": heldout,
        "tokenizer_vocab": tok.get_vocab_size(),
        "corpus": {"description": SOURCE_DESCRIPTION, "licence": LICENCE, "splits": corpus.summary()},
        "command": command,
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def install_folders(staging: Path, out_dir: Path, names: list[str], log: Log) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        final = out_dir / name
        if final.exists():
            shutil.rmtree(final)
        shutil.move(str(staging / name), str(final))
        log(f"installed {final}")


def build_family(profile: Profile, out_dir: Path, seed: int = 0, threads: int = 2,
                 command: str | None = None, log: Log = print_log) -> dict:
    """Train every model of ``profile`` and install the folders under ``out_dir``."""
    started = time.perf_counter()
    torch.set_num_threads(threads)
    seed_everything(seed)
    command = command or "python -m training " + " ".join(sys.argv[1:])
    corpus = build_corpus(profile.max_code_files, profile.max_topics, profile.heldout_every)
    log(f"corpus: {corpus.summary()}")
    tok = train_tokenizer(tokenizer_texts(corpus), profile.vocab_size)
    streams = encode_splits(tok, corpus)
    log(f"tokenizer: {tok.get_vocab_size()} tokens; streams: { {k: len(v) for k, v in streams.items()} }")
    windows = {kind: heldout_windows(streams[f"{kind}_heldout"], profile.seq_len, profile.eval_windows)
               for kind in ("code", "prose")}
    trained, timings = {}, {}
    with tempfile.TemporaryDirectory(prefix="specdec-family-") as tmp:
        staging = Path(tmp)
        for index, run in enumerate(profile.runs):
            model, stats = train_one(run, index, profile, streams, tok, trained, seed, log)
            heldout = loss_report(model, windows)
            log(f"{run.name}: held-out {heldout}")
            record = build_record(run, model, stats, profile, corpus, tok, heldout, command)
            save_model_folder(model, tok, staging / run.name, record)
            trained[run.name] = model
            timings[run.name] = stats["train_seconds"]
        install_folders(staging, out_dir, [run.name for run in profile.runs], log)
    total = round(time.perf_counter() - started, 1)
    log(f"family built in {total} s: {timings}")
    return {"seconds": total, "train_seconds": timings, "models": [r.name for r in profile.runs]}
