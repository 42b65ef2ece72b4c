"""The zoo's drafters as checkpoints vLLM loads: the draft model for `draft_model`, the EAGLE head for `eagle`
(eagle_tensors) and the EAGLE-3 head for `eagle3` (export_eagle3.py). The EAGLE head's export is approximate
(eagle_tensors says where); the EAGLE-3 head's is weight for weight, and the draft model's is exact:

`smollm2-135m-draft` is stored as its two own decoder layers only (assets/drafters/): at run time it shares the
target's embedding and final norm and scores the target's head rows of a 12,288-token draft vocabulary. vLLM's
draft_model method loads a whole LlamaForCausalLM with the target's vocabulary, and a Llama head has no bias
to keep the other 36,864 ids out, so the export is: the two layers, the target's embedding and norm, and the
target's whole (tied) head — every id of the vocabulary can be drafted. The lab's engine loads the same folder
as a plain draft model, which is how the side-by-side table compares the two engines on the same draft
(docs/vllm.md); the zoo drafter itself (draft vocabulary only) differs where the draft's argmax over the whole
vocabulary falls outside the draft vocabulary.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Callable

from specdec.models.fetch import ensure_model, is_fetchable
from specdec.paths import cache_dir
from specdec.vllm.client import VllmError

EXPORTABLE = {"smollm2-135m-draft": "smollm2-135m-instruct", "smollm2-135m-eagle": "smollm2-135m-instruct",
              "smollm2-135m-eagle3": "smollm2-135m-instruct"}
Say = Callable[[str], None]


def export_dir(name: str) -> Path:
    return cache_dir() / "vllm-export" / name


def resolve_target(name: str, say: Say = print) -> str:
    """A fetchable name -> its folder (fetched and converted once); a folder or hub id as given."""
    if is_fetchable(name):
        return str(ensure_model(name, progress=say))
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser().resolve())
    return name


def resolve_draft(name: str, say: Say = print) -> str:
    """A zoo draft -> its exported folder (made once); a folder or hub id as given."""
    if name in EXPORTABLE:
        return str(export_draft(name, say=say))
    return resolve_target(name, say)


def export_draft(name: str, say: Say = print, out: Path | None = None) -> Path:
    """Writes (once) the zoo draft `name` as a LlamaForCausalLM folder: config, safetensors, tokenizer."""
    if name not in EXPORTABLE:
        raise VllmError(f"{name!r} cannot be exported for vLLM; exportable: {', '.join(EXPORTABLE)}")
    from specdec.drafters.shipped import drafter_dir, load_tensors, read_meta

    out = Path(out or export_dir(name))
    source = source_fingerprint(drafter_dir(name))
    if export_is_current(out, source):
        return out
    from safetensors.torch import load_file, save_file

    target_dir = Path(resolve_target(EXPORTABLE[name], say))
    say(f"Exporting {name} as a checkpoint for vLLM ({out})…")
    meta, own = read_meta(drafter_dir(name)), load_tensors(drafter_dir(name))
    config, target_file = None, str(target_dir / "model.safetensors")
    if name == "smollm2-135m-eagle":
        tensors, layers, note = eagle_tensors(own), int(meta.get("layers", 1)), \
            f"{name}: vLLM's EAGLE format (see eagle_tensors)"
    elif name == "smollm2-135m-eagle3":
        (tensors, config), layers, note = _eagle3_export(target_dir, meta, own, load_file(target_file)), 1, ""
    else:
        target = load_file(target_file)
        tensors = {"model.embed_tokens.weight": target["model.embed_tokens.weight"],
                   "model.norm.weight": target["model.norm.weight"]}
        tensors.update({f"model.{key}": value for key, value in own.items() if key.startswith("layers.")})
        layers, note = int(meta["layers"]), f"{name}: 2 own layers + the target's embedding, norm and tied head"
    return _write(out, target_dir, tensors, layers, save_file, note, config, source)


def source_fingerprint(folder: Path) -> str:
    """What an export was made from: a digest of the zoo entry's weights and zoo.json (a new head, a new export)."""
    digest = hashlib.sha256()
    for file in ("zoo.json", "model.safetensors"):
        path = Path(folder) / file
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()[:16]


def export_is_current(out: Path, source: str) -> bool:
    """Whether out holds an export of exactly that source (a folder from other weights is made again)."""
    config = Path(out) / "config.json"
    if not (Path(out) / "model.safetensors").is_file() or not config.is_file():
        return False
    try:
        return json.loads(config.read_text()).get("_specdec_source") == source
    except ValueError:
        return False


def eagle_tensors(own: dict) -> dict:
    """The zoo's EAGLE head in vLLM's EAGLE (v1, llama_eagle.py) layout: `fc` over [token embedding; feature]
    (the zoo's is [feature; 14 x embedding], so its two column blocks swap and the embedding's is scaled), the
    decoder layer under `layers.0.`; embedding and head come from the target. vLLM's EAGLE layer 0 has no input
    RMSNorm (EAGLE-1's design), so the zoo layer's input_layernorm cannot be carried over: the exported head is
    not the same function as the lab's, and it drafts over the whole vocabulary, not the 12,288-token one."""
    from specdec.drafters.heads import EagleHead

    fc = own["head.fc.weight"]
    d = fc.shape[0]
    tensors = {"fc.weight": torch_cat([fc[:, d:] * EagleHead.EMB_SCALE, fc[:, :d]])}
    tensors.update({key[len("head."):]: value for key, value in own.items()
                    if key.startswith("head.layers.") and "input_layernorm" not in key})
    return tensors


def _eagle3_export(target_dir: Path, meta: dict, own: dict, target: dict) -> tuple[dict, dict]:
    """(tensors, config) of the EAGLE-3 head in vLLM's eagle3 layout; a head of the zoo's fc layer is refused."""
    from specdec.vllm.export_eagle3 import eagle3_config, eagle3_tensors

    if meta.get("input_layout") != "concat":
        raise VllmError("this EAGLE-3 head was trained in the zoo's fc layer, which vLLM's eagle3 cannot run; train it "
                        "in vLLM's layer (eagle_input 'concat', as the shipped recipe eagle3-asked-more) to export it "
                        "(docs/vllm.md, 'The EAGLE-3 head in vLLM')")
    config = eagle3_config(json.loads((target_dir / "config.json").read_text()), meta, len(own["draft_vocab"]))
    config["_specdec_export"] = "smollm2-135m-eagle3: trained in vLLM's eagle3 layer, exported weight for weight"
    return eagle3_tensors(own, target), config


def torch_cat(blocks):
    import torch

    return torch.cat([b.float() for b in blocks], dim=1).to(blocks[0].dtype)


def _write(out: Path, target_dir: Path, tensors: dict, layers: int, save_file, note: str = "",
           config: dict | None = None, source: str = "") -> Path:
    if config is None:
        config = json.loads((target_dir / "config.json").read_text())
        config.update(num_hidden_layers=layers, tie_word_embeddings=True, _specdec_export=note)
    config["_specdec_source"] = source  # export_is_current
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(staging / "model.safetensors"),
              metadata={"format": "pt"})
    (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for extra in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja",
                  "special_tokens_map.json"):
        if (target_dir / extra).is_file():
            shutil.copy(target_dir / extra, staging / extra)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out
