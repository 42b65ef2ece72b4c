"""Which runner runs a model: the one choice every caller (a loaded model, a drafter's shared network) makes.

LabKernelRunner for a model holding a GGUF's blocks (block_weights.has_blocks: it has no float weights for the others);
HFEagerRunner where asked for (backend "hf-eager") or where the runner template does not fit the architecture
(static.supports_static); LabKernelRunner where the lab's kernels are asked for (kernels "lab": the measured path's
choice, tuning.py) and fit the model here (lab_kernels.fits); else StaticLlamaRunner. A runner is refused with a
message, before anything is allocated, when its KV cache would not fit in free memory.
"""
from __future__ import annotations

from specdec.models.memory import check_run_fits
from specdec.runners import block_weights, lab_kernels, packed_weights
from specdec.runners.backend import HFEagerRunner, TimedRunner
from specdec.runners.lab_kernels import LabKernelRunner
from specdec.runners.static import StaticLlamaRunner, attention_dtype, supports_static


def runner_class(model, *, backend: str = "auto", kernels: str = "torch") -> type[TimedRunner]:
    """The runner select() makes for this model (module docstring). backend: "auto" or "hf-eager"; kernels:
    "torch" or "lab"."""
    if block_weights.has_blocks(model):  # a GGUF's blocks run on the kernels only (block_model.py checks they run here)
        return LabKernelRunner
    if backend == "hf-eager" or not supports_static(model):
        return HFEagerRunner
    if kernels == "lab" and not lab_kernels.fits(model):
        return LabKernelRunner
    return StaticLlamaRunner


def runner_kind(model, *, backend: str = "auto", kernels: str = "torch") -> str:
    """The runner select() makes, in words: 'hf-eager', 'static', or 'static, <its weight copies>'."""
    chosen = runner_class(model, backend=backend, kernels=kernels)
    if chosen is HFEagerRunner:
        return "hf-eager"
    copies = lab_kernels.kind(model) if chosen is LabKernelRunner else packed_weights.copy_kind(model)
    return f"static, {copies}" if copies else "static"


def select(model, vocab_limit: int, max_length: int, keep_hidden: bool | tuple[int, ...] = False, *,
           name: str = "this model", backend: str = "auto", kernels: str = "torch") -> TimedRunner:
    """A fresh runner (module docstring) for one sequence of at most max_length positions; logits keep the first
    vocab_limit ids; keep_hidden: backend.py. name: the model in the message of a refusal."""
    chosen = runner_class(model, backend=backend, kernels=kernels)
    weight = next(model.parameters())
    kv_dtype = weight.dtype if chosen is HFEagerRunner else attention_dtype(weight.dtype, weight.device)
    check_run_fits(name, model.config, kv_dtype, weight.device, max_length)
    if chosen is HFEagerRunner:
        return HFEagerRunner(model, vocab_limit, keep_hidden)
    return chosen(model, vocab_limit, max_length, keep_hidden)
