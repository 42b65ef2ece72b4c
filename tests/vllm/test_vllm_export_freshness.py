"""A zoo drafter's vLLM export is made once and made again when the zoo entry's weights change (a stale export would
serve an old head under the new one's name)."""
from __future__ import annotations

import json

from specdec.vllm.export import export_is_current, source_fingerprint


def zoo_entry(folder, weights: bytes):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "zoo.json").write_text('{"family": "eagle"}')
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def export_of(folder, source: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(b"exported")
    (folder / "config.json").write_text(json.dumps({"_specdec_source": source}))
    return folder


def test_new_weights_in_a_zoo_entry_give_a_new_fingerprint(tmp_path):
    entry = zoo_entry(tmp_path / "zoo", b"old weights")
    before = source_fingerprint(entry)
    zoo_entry(entry, b"new weights")
    assert source_fingerprint(entry) != before


def test_an_export_of_the_same_weights_is_reused(tmp_path):
    source = source_fingerprint(zoo_entry(tmp_path / "zoo", b"weights"))
    assert export_is_current(export_of(tmp_path / "export", source), source)


def test_an_export_of_other_weights_is_made_again(tmp_path):
    old = source_fingerprint(zoo_entry(tmp_path / "zoo", b"old weights"))
    out = export_of(tmp_path / "export", old)
    assert not export_is_current(out, source_fingerprint(zoo_entry(tmp_path / "zoo", b"new weights")))


def test_an_export_from_before_fingerprints_or_half_written_is_made_again(tmp_path):
    source = source_fingerprint(zoo_entry(tmp_path / "zoo", b"weights"))
    unmarked = export_of(tmp_path / "unmarked", source)
    (unmarked / "config.json").write_text("{}")
    half = export_of(tmp_path / "half", source)
    (half / "model.safetensors").unlink()
    assert not export_is_current(unmarked, source) and not export_is_current(half, source)
