"""The zoo's draft model (assets/drafters/smollm2-135m-draft) as a GGUF llama.cpp can draft with, written by
llama.cpp's own converter (convert_hf_to_gguf.py from the build's source tree).

The lab's draft model is two decoder layers of its own on the target's embedding, final norm and the head rows of
its 12,288-token draft vocabulary (drafters/draft_model.py). llama.cpp's draft must be a whole model of the target's
vocabulary, so the export is a plain LlamaForCausalLM: the two layers, the target's embedding and final norm, and the
target's tied head over all 49,152 ids (its drafted token is the argmax over every id, where the lab's is over the
draft vocabulary: the same network but for that last product). The target's tensors come from the converted folder
(fetch.py; bfloat16 values dequantised from the published blocks), the tokenizer files too. Written once into
<llama.cpp folder>/exports/ and reused while the draft's weights and the outtype are the same. The converter imports
sentencepiece (for SentencePiece tokenizers; SmolLM2's is BPE), which the lab does not need: it is installed once into
<llama.cpp folder>/converter-packages (pip --target) and put on the converter's path only.
"""
from __future__ import annotations

import copy
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from specdec.llamacpp.build import LlamaCppError, root, source_dir
from specdec.paths import SHIPPED_DRAFTERS_DIR

DRAFT = "smollm2-135m-draft"
CONVERTER_PACKAGES = ("sentencepiece>=0.1.98,<0.3.0",)  # llama.cpp's requirements-convert_legacy_llama.txt
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")


def draft_gguf(target_folder: Path, outtype: str = "q8_0", name: str = DRAFT) -> Path:
    """The draft model's GGUF in `outtype` (llama.cpp's converter's --outtype: f16, bf16, q8_0, ...), written once."""
    weights = SHIPPED_DRAFTERS_DIR / name / "model.safetensors"
    if not weights.is_file():
        raise LlamaCppError(f"{name}'s weights are not in {weights.parent}")
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
    target = root() / "exports" / f"{name}-{digest}.{outtype}.gguf"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        folder = Path(scratch) / "hf"
        write_hf_folder(Path(target_folder), weights, folder)
        partial = Path(scratch) / target.name
        command = [sys.executable, str(source_dir() / "convert_hf_to_gguf.py"), str(folder), "--outfile", str(partial),
                   "--outtype", outtype]
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
            str(converter_packages()), os.environ.get("PYTHONPATH", "")]))}
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=environment)
        if done.returncode != 0 or not partial.is_file():
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise LlamaCppError(f"llama.cpp's converter failed on {name}: {tail}")
        partial.replace(target)
    return target


def converter_packages() -> Path:
    """The folder holding what llama.cpp's converter imports beyond the lab's own packages, installed once."""
    folder = root() / "converter-packages"
    if not (folder / "sentencepiece").is_dir():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--target", str(folder), "--no-deps",
                               "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
                               *CONVERTER_PACKAGES], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise LlamaCppError(f"installing what llama.cpp's converter imports failed: {tail}")
    return folder


def write_hf_folder(target_folder: Path, draft_weights: Path, out: Path) -> None:
    """A plain LlamaForCausalLM folder: the draft's layers on the target's embedding, final norm and tied head."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, LlamaForCausalLM

    config = AutoConfig.from_pretrained(target_folder)
    draft = load_file(str(draft_weights))
    layers = sorted({int(key.split(".")[1]) for key in draft if key.startswith("layers.")})
    config = copy.deepcopy(config)
    config.num_hidden_layers = len(layers)
    target = load_file(str(next(Path(target_folder).glob("*.safetensors"))))
    tensors = {"model.embed_tokens.weight": target["model.embed_tokens.weight"],
               "model.norm.weight": target["model.norm.weight"]}
    tensors.update({f"model.{key}": value for key, value in draft.items() if key.startswith("layers.")})
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if unexpected or set(missing) - {"lm_head.weight"}:  # lm_head is tied to the embedding
        raise LlamaCppError(f"the draft's tensors do not fit its config (missing {missing[:3]}, unexpected "
                            f"{unexpected[:3]})")
    model.tie_weights()
    model.save_pretrained(out)
    for name in TOKENIZER_FILES:
        if (Path(target_folder) / name).is_file():
            shutil.copy(Path(target_folder) / name, out / name)
