"""Loading causal LMs (bundled name, hub id or local folder) into a bounded, shared cache.

Safetensors only; before the weights load, the config must describe a causal LM (model_checks.py) and
the weights must fit the cache's byte budget and the free memory (memory.py); loaded models are
released least recently used first (model_cache.py). Pair checks live in compat.py (re-exported)."""
from __future__ import annotations

import gc
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from specdec.errors import InvalidSettingsError, LocalPathsDisabledError, ModelLoadError, OfflineError, first_line
from specdec.models import fetch, hub, presets
from specdec.models.cache import ModelCache
from specdec.models.checks import check_causal_lm, check_loading_info, explain_load_failure
from specdec.models import gguf_files
from specdec.models.block_model import load_block_parts
from specdec.models.dtypes import BF16_MIN_PARAMS, BLOCK_FORMATS, DTYPES, dtype_name  # noqa: F401 (re-exported)
from specdec.models.memory import check_load_fits, default_budget
from specdec.models.vocabulary import check_compatible, describe_vocab_mismatch, shared_vocab_size  # noqa: F401 (re-exported)
from specdec.runners import lab_kernels as lab_kernel_runner
from specdec.runners import packed_weights, tuning
from specdec.runners.block_weights import held_bytes
from specdec.runners.selection import runner_kind, select
from specdec.runners.threads import set_model_threads, set_row_threads

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

Progress = Optional[Callable[[str], None]]
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
    tuned: object = None  # the measured `auto` path it was loaded by (tuning.TunedPath), None for explicit dtypes
    kernels: str = "torch"  # its CPU forwards: "torch" kernels, or "lab" kernels (lab_kernel_runner.py)
    weights: str = ""  # a GGUF's block format it runs from ("q4_1", "q8_0": block_model.py), "" for float weights
    _texts: dict = field(default_factory=dict, repr=False)

    @property
    def weights_label(self) -> str:
        """Which weights ran, in words (run records, bench, exports): gguf_files.weights_label."""
        return gguf_files.weights_label(self)

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

    @property
    def param_bytes(self) -> int:
        """The weights: parameters, a GGUF's blocks, and the packed copies the runners made (packed_weights.py)."""
        return held_bytes(self.model)

    @property
    def memory_bytes(self) -> int:
        """What the model holds in memory: weights and buffers (the cache's measure)."""
        return self.param_bytes + sum(b.numel() * b.element_size() for b in self.model.buffers())

    @property
    def runner_kind(self) -> str:
        """The runner new_runner makes, in words (selection.runner_kind)."""
        return runner_kind(self.model, backend=self.backend, kernels=self.kernels)

    def new_runner(self, vocab_limit: int, max_length: int, keep_hidden: bool | tuple[int, ...] = False):
        """A fresh KV cache for one sequence of at most max_length positions (keep_hidden: see backend.py), on the
        runner selection.select chooses for this model, its backend and its kernels; refused with a message,
        before anything is allocated, when it would not fit in free memory."""
        return select(self.model, vocab_limit, max_length, keep_hidden, name=self.name, backend=self.backend,
                      kernels=self.kernels)

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise ModelLoadError(f"{self.name} has no tokenizer: pass token ids instead of text")
        try:
            return list(self.tokenizer(text)["input_ids"])
        except Exception as exc:  # tokenizers raise plain Exceptions (e.g. no unknown token for a character)
            raise InvalidSettingsError(f"{self.name}'s tokenizer cannot encode this prompt: {first_line(exc)}") from exc

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


def _release(model) -> None:
    """After the cache drops a model: give its memory back once no run holds it any more."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


MODELS = ModelCache(release=_release)  # every loaded model, shared read-only by all callers
_budget_gb: Optional[float] = None  # None: default_budget(device), half of the device's memory


def set_cache_budget(gigabytes: Optional[float]) -> None:
    """Bytes of loaded models kept (None: half of the device's memory); the app sets it at start."""
    global _budget_gb
    _budget_gb = gigabytes


def cache_budget(device: torch.device) -> Optional[int]:
    return int(_budget_gb * 1e9) if _budget_gb is not None else default_budget(device)


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ModelLoadError(f"Unknown device {device!r}: use auto, cpu or cuda") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("Device cuda was asked for, but no CUDA GPU is available here")
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise ModelLoadError(f"Device {device} does not exist: this machine has {torch.cuda.device_count()} CUDA GPU(s)")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ModelLoadError("Device mps was asked for, but Apple's Metal backend is not available here")
    if resolved.type not in ("cpu", "cuda", "mps"):
        raise ModelLoadError(f"Device {device!r} is not supported: use auto, cpu, cuda or mps")
    return resolved


def resolve_dtype(dtype: str, device: torch.device, source: str | None = None) -> torch.dtype:
    """The rules `auto` follows where it is not measured (a GPU; a CPU with SPECDEC_TUNING=0; load_model
    measures on a CPU: tuning.py). `auto`: bfloat16 on CUDA; on a CPU, bfloat16 only with AMX (packed_weights.cpu_has_amx_bf16: there bf16
    products are row-exact and verification nearly flat) and a model (source: folder or hub id) of at least
    BF16_MIN_PARAMS parameters, else float32 (with float16 weight copies where exact: where bf16 products are not
    row-exact that path verifies exactly and can decode faster than bfloat16; docs/models.md)."""
    if dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16
        if device.type == "cpu" and packed_weights.cpu_has_amx_bf16() and is_large_model(source):
            return torch.bfloat16
        return torch.float32
    if dtype not in DTYPES:
        raise ModelLoadError(f"Unknown dtype {dtype!r}: use auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


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


MAX_HEADER_BYTES = 100_000_000  # safetensors' own limit on a header


def parameter_count(folder: str) -> int:
    """Parameters in a folder's *.safetensors, read from their JSON headers (no weights are read)."""
    total = 0
    for entry in sorted(os.listdir(folder)):
        if entry.endswith(".safetensors"):
            path = os.path.join(folder, entry)
            with open(path, "rb") as weights:
                length = int.from_bytes(weights.read(8), "little")
                if not 0 < length <= min(os.path.getsize(path) - 8, MAX_HEADER_BYTES):
                    raise ValueError(f"{entry} has a damaged header")  # never read a length a damaged file claims
                header = json.loads(weights.read(length))
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
    tuned, blocks = None, dtype if dtype in BLOCK_FORMATS else ""  # blocks: a GGUF's own (gguf_files.py)
    if dtype == "auto" and torch_device.type == "cpu" and tuning.enabled():  # measured, not ruled (tuning.py)
        as_float32 = lambda: load_model(name, device=device, dtype="float32", trust_remote_code=trust_remote_code,  # noqa: E731
                                        allow_local_paths=allow_local_paths, progress=progress)
        tuned = tuning.tuned_path(source, torch_device, as_float32, trust_remote_code=trust_remote_code,
                                  say=progress or (lambda message: None), blocks=gguf_files.block_loaders(
                                      name, source, torch_device, lambda fmt: load_model(name, dtype=fmt)))
        blocks = tuned.dtype if tuned.dtype in BLOCK_FORMATS else ""
    torch_dtype = torch.float32 if blocks else DTYPES[tuned.dtype] if tuned else resolve_dtype(dtype, torch_device, source)
    key = (source, str(torch_device), blocks or torch_dtype, trust_remote_code)
    MODELS.budget = cache_budget(torch_device)
    estimate = gguf_files.size(name, blocks) if blocks else folder_weight_bytes(source, torch_dtype)
    loaded = MODELS.get_or_load(
        key, (lambda: LoadedModel(name, source, *load_block_parts(name, source, blocks, torch_device, progress),
                                  kernels="lab", weights=blocks)) if blocks else
        (lambda: _load_uncached(name, source, is_local, torch_device, torch_dtype, trust_remote_code, progress)),
        size=lambda loaded: loaded.memory_bytes, estimate=estimate,
        admit=lambda budget: check_load_fits(name, estimate, torch_device, budget))
    if tuned is not None:
        loaded.tuned = tuned
        # the lab's kernels where they were measured fastest and still build and fit here
        loaded.kernels = "lab" if blocks or tuned.kernels == "lab" and not lab_kernel_runner.fits(loaded.model) else "torch"
        set_model_threads(loaded.model, tuned.threads)
        # a step's and a verification's own counts, measured on the chosen kernels
        set_row_threads(loaded.model, tuned.threads_by_rows if loaded.kernels == tuned.kernels else None)
        tuning.remember(name, tuned)
    return loaded


def folder_weight_bytes(source: str, dtype: torch.dtype) -> Optional[int]:
    """The weights' size in memory at `dtype`, from the safetensors headers of a local folder or of a
    hub id already in the local cache; None when unknown (a hub id not downloaded yet: see
    _check_hub_size) or unreadable (the loader then says what is wrong)."""
    folder = source if os.path.isdir(source) else _cached_snapshot(source)
    if folder is None:
        return None
    try:
        count = parameter_count(folder)
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return None
    return count * dtype.itemsize if count else None


def _cached_snapshot(hub_id: str) -> Optional[str]:
    try:
        from huggingface_hub import try_to_load_from_cache

        config = try_to_load_from_cache(hub_id, "config.json")
    except Exception:  # noqa: BLE001 (not an id the hub library accepts)
        return None
    return os.path.dirname(config) if isinstance(config, str) else None


def is_local_path(name: str) -> bool:
    """Whether locate reads `name` as a folder on this machine (a path, or the name of a folder here)."""
    return name.startswith(("/", "./", "../", "~")) or os.path.isdir(os.path.expanduser(name))


def is_downloaded(hub_id: str) -> bool:
    """Whether a Hub id's files are in this machine's Hugging Face cache (loading it downloads nothing)."""
    return _cached_snapshot(hub_id) is not None


def locate(name: str, allow_local_paths: bool, progress: Progress = None) -> tuple[str, bool]:
    """(folder or hub id, is_local). Bundled and fetchable models are always allowed; a fetchable one
    may be downloaded and converted here (fetch.ensure_model), reporting through progress."""
    if presets.is_bundled(name):
        return presets.resolve_model(name), True
    if fetch.is_fetchable(name):
        source = fetch.ensure_model(name, progress)
        return source, os.path.isdir(source)
    if is_local_path(name):
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
        if not common["local_files_only"]:
            _check_hub_size(name, source, dtype, device)
    config = _load_config(name, source, common)
    check_causal_lm(name, config)
    say(f"Loading tokenizer of {name}…")
    tokenizer = _load_tokenizer(source, common)
    say(f"Loading weights of {name} ({dtype_name(dtype)} on {device})…")
    model = _load_weights(name, source, config, dtype, device, common)
    elapsed = time.perf_counter() - start
    say(f"Loaded {name} in {elapsed:.1f} s")
    return LoadedModel(name, source, model, tokenizer, device, dtype, load_time_s=elapsed)


def _load_config(name: str, source: str, common: dict):
    try:
        return AutoConfig.from_pretrained(source, **common)
    except Exception as exc:  # noqa: BLE001 (OSError, ValueError, JSON errors: one line each)
        raise ModelLoadError(explain_load_failure(name, source, exc)) from exc


def _load_weights(name: str, source: str, config, dtype, device, common: dict):
    """The weights (safetensors only), on the device; damaged, incomplete or unloadable weights are
    one-line ModelLoadErrors."""
    try:
        model, info = AutoModelForCausalLM.from_pretrained(source, config=config, dtype=dtype, use_safetensors=True,
                                                           output_loading_info=True, **common)
        check_loading_info(name, info)
        return model.to(device).eval().requires_grad_(False)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 (SafetensorError, OSError, RuntimeError, out of memory…)
        raise ModelLoadError(explain_load_failure(name, source, exc)) from exc


def _check_hub_size(name: str, hub_id: str, dtype, device) -> None:
    """Before a download: the hub's safetensors metadata says how large the weights are (best effort)."""
    try:
        from huggingface_hub import get_safetensors_metadata

        count = sum(get_safetensors_metadata(hub_id).parameter_count.values())
    except Exception:  # noqa: BLE001 (no metadata, no safetensors, gated: the load itself will say)
        return
    check_load_fits(name, count * dtype.itemsize, device, cache_budget(device))


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
    if not hub.hub_reachable():
        raise OfflineError(
            f"{hub_id} is an online model that is not downloaded on this machine, and the Hugging Face Hub "
            "cannot be reached from here. Use the bundled models (lab-target with lab-draft-distilled, "
            "lab-draft-small, …), or run SpecDec Lab on a machine with internet access."
        )
    return False
