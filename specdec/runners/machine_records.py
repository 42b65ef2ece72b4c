"""The machine key and the measurement records kept per key: what a measurement on this machine is valid for,
and the JSON files (in the cache folder, SPECDEC_CACHE, or SPECDEC_RECORDS) that keep it across processes.

A key names what decides a forward's speed here: the model's shape, the device, the CPU model and the vector
extensions that pick its kernels, the torch version, the OpenMP wait policy in force, the cores and whether the
lab's kernels build. Two measurements use it: the tuned path (tuning.py, tuning.json) and a drafter's costs
(planning/costs.py). A file holds {"format": N, "records": {key text: record}}; a file of another format reads
as empty, so a change of what is measured (its format number) measures again.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from specdec import config
from specdec.paths import cache_dir
from specdec.process import describe_process
from specdec.runners import native_kernels, packed_weights

import torch

KEY_FLAGS = ("amx_bf16", "avx512_bf16", "avx512f", "avx2")  # the extensions that pick CPU kernels


# --- the key -----------------------------------------------------------------------------------------------

def cpu_model() -> str:
    """The CPU's model string and the vector extensions that pick its kernels (e.g. 'AMD EPYC [avx512_bf16 ...]')."""
    flags = [f for f in KEY_FLAGS if f in packed_weights.cpu_flags()]
    return f"{packed_weights.cpu_name()} [{' '.join(flags) or 'no listed extensions'}]"


def model_shape(config) -> str:
    """What decides a forward's cost: architecture, layers, widths, heads, vocabulary."""
    arch = (getattr(config, "architectures", None) or [type(config).__name__])[0]
    heads = getattr(config, "num_attention_heads", "?")
    kv = getattr(config, "num_key_value_heads", None) or heads
    return (f"{arch} layers={getattr(config, 'num_hidden_layers', '?')} hidden={getattr(config, 'hidden_size', '?')} "
            f"ffn={getattr(config, 'intermediate_size', '?')} heads={heads}/{kv} vocab={getattr(config, 'vocab_size', '?')} "
            f"tied={bool(getattr(config, 'tie_word_embeddings', False))}")


def tuning_key(config, device: torch.device) -> dict:
    return {"model": model_shape(config), "device": str(device), "cpu": cpu_model(), "torch": torch.__version__,
            "omp_wait_policy": describe_process().get("omp_wait_policy", os.environ.get("OMP_WAIT_POLICY", "default")),
            "cores": available_cores(), "lab_kernels": native_kernels.build_id() or False}


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def key_text(key: dict) -> str:
    return json.dumps(key, sort_keys=True)


# --- the record files ----------------------------------------------------------------------------------------

def records_file(name: str) -> Path:
    """The record file in SPECDEC_RECORDS, else in the cache folder. The test suite sets SPECDEC_RECORDS to a
    folder of its own: what it measures while its workers share the cores is no measure of this machine."""
    folder = config.get("SPECDEC_RECORDS")
    return (folder if folder is not None else cache_dir()) / name


def read_records(name: str, fmt: int) -> dict:
    """A measurement cache file's records ({key text: record}); {} when absent, unreadable or of another format."""
    try:
        data = json.loads(records_file(name).read_text())
    except (OSError, ValueError):
        return {}
    return data.get("records", {}) if isinstance(data, dict) and data.get("format") == fmt else {}


def write_record(key: dict, record: dict, name: str, fmt: int) -> None:
    """Adds (or replaces) the record of a key; written whole to a temporary file, then renamed."""
    records = read_records(name, fmt)
    records[key_text(key)] = record
    target = records_file(name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"format": fmt, "records": records}, indent=1))
        os.replace(temporary, target)
    except OSError:  # a read-only cache: the measurement holds for this process only
        pass


def cached_record(key: dict, name: str, fmt: int) -> Optional[dict]:
    return read_records(name, fmt).get(key_text(key))
