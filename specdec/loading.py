"""Loading causal LMs (bundled name, hub id or local folder) and checking draft/target pairs."""
from __future__ import annotations

import functools
import json
import math
import os
import re
import socket
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable, Optional
from urllib.parse import urlparse

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from . import fetch, presets
from .backend import HFEagerRunner
from .static_runner import StaticLlamaRunner, supports_static
from .errors import (
    IncompatibleModelsError,
    LocalPathsDisabledError,
    ModelLoadError,
    OfflineError,
)

Progress = Optional[Callable[[str], None]]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(eq=False)
class LoadedModel:
    name: str  # what the user asked for
    source: str  # resolved folder or hub id
    model: torch.nn.Module
    tokenizer: object | None
    device: torch.device
    dtype: torch.dtype
    load_time_s: float = 0.0
    backend: str = "auto"  # "auto": the static runner where the architecture allows; "hf-eager": always HF
    _texts: dict = field(default_factory=dict, repr=False)

    @property
    def embedding_rows(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    @property
    def real_vocab_size(self) -> int:
        """Ids that mean something: the tokenizer's vocabulary, not embedding padding."""
        if self.tokenizer is None:
            return self.embedding_rows
        return min(len(self.tokenizer), self.embedding_rows)

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        for source in (getattr(self.model, "generation_config", None), self.model.config, self.tokenizer):
            eos = getattr(source, "eos_token_id", None) if source is not None else None
            if eos is not None:
                return tuple(eos) if isinstance(eos, (list, tuple)) else (int(eos),)
        return ()

    @functools.cached_property
    def param_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.model.parameters())

    @property
    def runner_kind(self) -> str:
        if self.backend == "hf-eager" or not supports_static(self.model):
            return "hf-eager"
        return "static"

    def new_runner(self, vocab_limit: int, max_length: int, keep_hidden: bool = False):
        """A fresh KV cache for one sequence of at most max_length positions (keep_hidden: see backend.py)."""
        if self.runner_kind == "static":
            return StaticLlamaRunner(self.model, vocab_limit, max_length, keep_hidden)
        return HFEagerRunner(self.model, vocab_limit, keep_hidden)

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise ModelLoadError(f"{self.name} has no tokenizer: pass token ids instead of text")
        return list(self.tokenizer(text)["input_ids"])

    def decode(self, ids: list[int]) -> str | None:
        if self.tokenizer is None:
            return None
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def token_text(self, token_id: int) -> str:
        """Text of one token as shown in traces (memoised: called for every traced token)."""
        text = self._texts.get(token_id)
        if text is None:
            text = self.tokenizer.decode([token_id]) if self.tokenizer is not None else f"<{token_id}>"
            self._texts[token_id] = text
        return text


_cache: dict[tuple, LoadedModel] = {}
_cache_lock = threading.Lock()


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise ModelLoadError(f"Unknown device {device!r}: use auto, cpu or cuda") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("Device cuda was asked for, but no CUDA GPU is available here")
    return resolved


BF16_MIN_PARAMS = 50_000_000  # chosen, not a measured crossover: small models stay float32 (docs/models.md)
BF16_CPU_FLAGS = {"avx512_bf16", "amx_bf16"}  # x86 instructions that compute bf16 natively


def resolve_dtype(dtype: str, device: torch.device, source: str | None = None) -> torch.dtype:
    """`auto`: bfloat16 on CUDA; on a CPU, bfloat16 only when it computes bf16 natively and the model
    (source: folder or hub id) has at least BF16_MIN_PARAMS parameters, else float32."""
    if dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16
        if device.type == "cpu" and cpu_has_native_bf16() and is_large_model(source):
            return torch.bfloat16
        return torch.float32
    if dtype not in DTYPES:
        raise ModelLoadError(f"Unknown dtype {dtype!r}: use auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


@functools.cache
def cpu_has_native_bf16() -> bool:
    """From /proc/cpuinfo's flags (Linux); elsewhere False, so auto stays float32."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return False
    return bool(BF16_CPU_FLAGS & set(flags))


def is_large_model(source: str | None) -> bool:
    """A local folder is measured from its safetensors headers; a hub id (size unknown before the
    download) counts as large: every online preset has 70M parameters or more."""
    if source is None:
        return False
    if not os.path.isdir(source):
        return True
    try:
        return parameter_count(source) >= BF16_MIN_PARAMS
    except (OSError, ValueError, KeyError, TypeError):  # unreadable headers: the loader will say why
        return False


def parameter_count(folder: str) -> int:
    """Parameters in a folder's *.safetensors, read from their JSON headers (no weights are read)."""
    total = 0
    for entry in sorted(os.listdir(folder)):
        if entry.endswith(".safetensors"):
            with open(os.path.join(folder, entry), "rb") as weights:
                header = json.loads(weights.read(int.from_bytes(weights.read(8), "little")))
            total += sum(math.prod(t["shape"]) for key, t in header.items() if key != "__metadata__")
    return total


def load_model(
    name_or_path: str,
    *,
    device: str = "auto",
    dtype: str = "auto",
    trust_remote_code: bool = False,
    allow_local_paths: bool = True,
    progress: Progress = None,
) -> LoadedModel:
    """Load (or fetch from the in-process cache) a causal LM and its tokenizer, safetensors only."""
    name = (name_or_path or "").strip()
    if not name:
        raise ModelLoadError("No model name given")
    source, is_local = locate(name, allow_local_paths, progress)
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device, source)
    key = (source, str(torch_device), torch_dtype, trust_remote_code)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
        loaded = _load_uncached(name, source, is_local, torch_device, torch_dtype, trust_remote_code, progress)
        _cache[key] = loaded
        return loaded


def locate(name: str, allow_local_paths: bool, progress: Progress = None) -> tuple[str, bool]:
    """(folder or hub id, is_local). Bundled and fetchable models are always allowed; a fetchable one
    may be downloaded and converted here (fetch.ensure_model), reporting through progress."""
    if presets.is_bundled(name):
        return presets.resolve_model(name), True
    if fetch.is_fetchable(name):
        source = fetch.ensure_model(name, progress)
        return source, os.path.isdir(source)
    if name.startswith(("/", "./", "../", "~")) or os.path.isdir(os.path.expanduser(name)):
        if not allow_local_paths:
            raise LocalPathsDisabledError(
                f"Loading models from local paths is disabled on this deployment ({name!r}); "
                "choose a bundled model or a Hugging Face Hub id"
            )
        folder = os.path.abspath(os.path.expanduser(name))
        if not os.path.isdir(folder):
            raise ModelLoadError(f"No model folder at {folder}")
        return folder, True
    if not _HUB_ID.match(name):
        raise ModelLoadError(f"{name!r} is neither a bundled model, a local folder nor a Hugging Face Hub id")
    return name, False


def _load_uncached(name, source, is_local, device, dtype, trust_remote_code, progress) -> LoadedModel:
    say = progress or (lambda message: None)
    start = time.perf_counter()
    common = {"trust_remote_code": trust_remote_code}
    if not is_local:
        common["local_files_only"] = not _available_locally(source, trust_remote_code)
    say(f"Loading tokenizer of {name}…")
    tokenizer = _load_tokenizer(source, common)
    say(f"Loading weights of {name} ({dtype_name(dtype)} on {device})…")
    try:
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, use_safetensors=True, **common)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(_explain_load_failure(name, source, exc)) from exc
    model.to(device).eval().requires_grad_(False)
    elapsed = time.perf_counter() - start
    say(f"Loaded {name} in {elapsed:.1f} s")
    return LoadedModel(name, source, model, tokenizer, device, dtype, load_time_s=elapsed)


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model", "spiece.model")


def _load_tokenizer(source: str, common: dict):
    if os.path.isdir(source) and not any(os.path.exists(os.path.join(source, f)) for f in TOKENIZER_FILES):
        return None  # a weights-only folder: callers pass token ids
    try:
        return AutoTokenizer.from_pretrained(source, **common)
    except (OSError, ValueError, TypeError):
        return None  # a weights-only folder: callers pass token ids


def _available_locally(hub_id: str, trust_remote_code: bool) -> bool:
    """True when the hub id is in the local HF cache; else checks the hub can be reached at all."""
    try:
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(hub_id, "config.json"), str):
            return True
    except Exception:
        pass
    if not hub_reachable():
        raise OfflineError(
            f"{hub_id} is an online model that is not downloaded on this machine, and the Hugging Face Hub "
            "cannot be reached from here. Use the bundled models (lab-target with lab-draft-distilled, "
            "lab-draft-small, …), or run SpecDec Lab on a machine with internet access."
        )
    return False


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether a TCP connection to the hub endpoint opens within timeout_s (never hangs longer)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    result: list[bool] = []

    def attempt():
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=attempt, daemon=True)  # DNS look-ups ignore socket timeouts
    worker.start()
    worker.join(timeout_s + 0.5)
    return bool(result and result[0])


def _explain_load_failure(name: str, source: str, exc: Exception) -> str:
    text = str(exc)
    if os.path.isdir(source):
        files = set(os.listdir(source))
        if "config.json" not in files:
            return f"{source} is not a model folder (no config.json)"
        if not any(f.endswith(".safetensors") for f in files):
            return f"{name} has no .safetensors weights; SpecDec Lab loads safetensors only (no pickled .bin files)"
    if "trust_remote_code" in text:
        return f"{name} needs custom code from its repository; it is only run when the operator enables trust_remote_code"
    first_line = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"Could not load {name}: {first_line}"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


_compatible: "weakref.WeakKeyDictionary[LoadedModel, weakref.WeakSet]" = weakref.WeakKeyDictionary()


def check_compatible(target: LoadedModel, draft: LoadedModel) -> None:
    """Raise IncompatibleModelsError unless the draft's token ids mean the same as the target's.
    A pair found compatible once is remembered (vocabularies of 150k tokens take a while)."""
    if draft in _compatible.get(target, ()):
        return
    _check_vocabularies(target, draft)
    _compatible.setdefault(target, weakref.WeakSet()).add(draft)


def _check_vocabularies(target: LoadedModel, draft: LoadedModel) -> None:
    if (target.tokenizer is None) != (draft.tokenizer is None):
        missing = target.name if target.tokenizer is None else draft.name
        raise IncompatibleModelsError(f"{target.name} and {draft.name} cannot be compared: {missing} has no tokenizer")
    if target.tokenizer is None:  # weights-only folders: ids must at least cover the same range
        if target.embedding_rows != draft.embedding_rows:
            raise IncompatibleModelsError(
                f"{target.name} ({target.embedding_rows} token ids) and {draft.name} "
                f"({draft.embedding_rows} token ids) have different vocabularies"
            )
        return
    target_vocab, draft_vocab = target.tokenizer.get_vocab(), draft.tokenizer.get_vocab()
    if target_vocab == draft_vocab:
        return
    raise IncompatibleModelsError(describe_vocab_mismatch(target.name, target_vocab, draft.name, draft_vocab))


def describe_vocab_mismatch(target_name: str, target_vocab: dict, draft_name: str, draft_vocab: dict) -> str:
    only_target = target_vocab.keys() - draft_vocab.keys()
    only_draft = draft_vocab.keys() - target_vocab.keys()
    moved = [t for t in target_vocab.keys() & draft_vocab.keys() if target_vocab[t] != draft_vocab[t]]
    parts = [f"{len(target_vocab)} vs {len(draft_vocab)} tokens"]
    if only_target or only_draft:
        parts.append(f"{len(only_target)} only in {target_name}, {len(only_draft)} only in {draft_name}")
    if moved:
        token = sorted(moved)[0]
        parts.append(
            f"{len(moved)} shared tokens have different ids (e.g. {token!r} is {target_vocab[token]} in "
            f"{target_name} but {draft_vocab[token]} in {draft_name})"
        )
    return (
        f"{draft_name} cannot draft for {target_name}: their tokenizers differ ({'; '.join(parts)}). "
        "Speculative decoding needs a draft that shares the target's vocabulary."
    )


def shared_vocab_size(target: LoadedModel, draft: LoadedModel | None) -> int:
    if draft is None:
        return target.real_vocab_size
    return min(target.real_vocab_size, draft.real_vocab_size)
