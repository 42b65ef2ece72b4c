"""A run's MemoryReport (specdec/engine/events.py defines its terms): the counted parts equal a hand computation
from the models' configs, and the measured peak is taken per run (CUDA: allocator statistics; CPU: RSS,
labelled coarse)."""
from __future__ import annotations

import json
from pathlib import Path

from specdec import DecodeSettings, generate, load_drafter, load_model
from specdec.cli.main import main
from specdec.drafters.eagle import EagleDrafter
from specdec.drafters.heads import EagleHead, MedusaHeads
from specdec.drafters.medusa import MedusaDrafter
from specdec.engine.events import PEAK_CPU, PEAK_CUDA, MemoryReport
from specdec.engine.metrics import memory_summary, peak_delta_bytes, start_memory_probe
from specdec.models.loading import LoadedModel
from specdec.runners import packed_weights

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

PROMPT = [5, 17, 42, 9, 300, 11]
SETTINGS = DecodeSettings(max_new_tokens=20, k=4)
FLOAT32 = 4  # bytes per parameter / cache element


def llama_parameters(c: dict) -> int:
    """Embedding, per layer (q, k, v, o, gate, up, down, two norms), final norm, and the head when untied."""
    d, heads, kv_heads = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    head_dim = c.get("head_dim") or d // heads
    attention = d * heads * head_dim + 2 * d * kv_heads * head_dim + heads * head_dim * d
    layer = attention + 3 * d * c["intermediate_size"] + 2 * d
    head = 0 if c["tie_word_embeddings"] else c["vocab_size"] * d
    return c["vocab_size"] * d + c["num_hidden_layers"] * layer + d + head


def weight_bytes(c: dict) -> int:
    """float32 parameters, plus the static runner's float16 copy of every matrix (packed_weights.py: the lab
    models' weights are all float16 values), norms excepted."""
    norms = (2 * c["num_hidden_layers"] + 1) * c["hidden_size"]
    copies = llama_parameters(c) - norms if packed_weights.fp16_available() else 0
    return llama_parameters(c) * FLOAT32 + copies * 2


def kv_per_position(c: dict) -> int:
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * head_dim * FLOAT32


def config_of(name: str) -> dict:
    from specdec.ui.launch import ROOT

    return json.loads((ROOT / "assets" / "models" / name / "config.json").read_text())


@pytest.fixture(scope="module")
def lab_target():
    return load_model("lab-target", device="cpu", dtype="float32")


def run_length(settings: DecodeSettings = SETTINGS) -> int:
    """Positions a run's static caches hold: prompt + new tokens + K drafted + 1."""
    return len(PROMPT) + settings.max_new_tokens + settings.k + 1


def test_a_draft_models_weights_and_both_kv_caches_match_a_hand_computation_from_the_configs(lab_target):
    target_c, draft_c = config_of("lab-target"), config_of("lab-draft-small")
    memory = generate(lab_target, load_drafter("lab-draft-small", lab_target), PROMPT, SETTINGS).metrics.memory
    assert memory.target_param_bytes == weight_bytes(target_c)
    assert memory.draft_param_bytes == weight_bytes(draft_c)
    assert memory.target_kv_bytes == kv_per_position(target_c) * run_length()
    assert memory.draft_kv_bytes == kv_per_position(draft_c) * run_length()
    assert memory.verify_kv_bytes == SETTINGS.k * kv_per_position(target_c)
    assert memory.extra_bytes == memory.draft_param_bytes + memory.draft_kv_bytes + memory.verify_kv_bytes


def test_prompt_lookup_costs_only_the_verification_slots(lab_target):
    memory = generate(lab_target, load_drafter("prompt-lookup", lab_target), PROMPT, SETTINGS).metrics.memory
    assert memory.draft_param_bytes == memory.draft_kv_bytes == 0
    assert memory.extra_bytes == SETTINGS.k * kv_per_position(config_of("lab-target"))


def test_the_verification_slots_grow_with_k(lab_target):
    drafter = load_drafter("prompt-lookup", lab_target)
    slots = [generate(lab_target, drafter, PROMPT, DecodeSettings(max_new_tokens=8, k=k)).metrics.memory.verify_kv_bytes
             for k in (1, 8)]
    assert slots[1] == 8 * slots[0] == 8 * kv_per_position(config_of("lab-target"))


def test_a_target_only_run_has_no_extra_memory(lab_target):
    memory = generate(lab_target, None, PROMPT, SETTINGS).metrics.memory
    assert memory.extra_bytes == 0 and memory.draft_param_bytes == memory.verify_kv_bytes == 0


# --- the trained heads, on a tiny Llama: their own parameters and state ----------------------------------

TINY = dict(vocab_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2)
DRAFT_VOCAB = torch.tensor([0, 1, 3, 4, 6])  # the head rows these drafters score


@pytest.fixture(scope="module")
def tiny_target():
    torch.manual_seed(0)
    config = LlamaConfig(**TINY, max_position_embeddings=256, bos_token_id=None, eos_token_id=None,
                         pad_token_id=None, tie_word_embeddings=True)
    return LoadedModel("tiny", "tiny", LlamaForCausalLM(config).eval(), None, torch.device("cpu"), torch.float32)


def context_rows(drafter) -> int:
    """The head rows (and biases) of the ids the run's text held outside DRAFT_VOCAB: per-request state. The
    prompt holds id 2, so there is at least one."""
    rows = len(drafter.head_rows.extra_ids)
    assert rows >= 1 and 2 in drafter.head_rows.extra_ids
    return rows


def tiny_run(target, drafter):
    return generate(target, drafter, [1, 4, 2], DecodeSettings(max_new_tokens=10, k=3)).metrics.memory


def test_medusa_adds_its_residual_blocks_their_float16_copies_and_head_rows_and_keeps_one_feature(tiny_target):
    d = TINY["hidden_size"]
    heads = MedusaHeads(tiny_target.model.config, 3)  # zero-initialised: float16 values, so they get copies
    drafter = MedusaDrafter(tiny_target, 8, heads, DRAFT_VOCAB, "m", "")
    memory = tiny_run(tiny_target, drafter)
    copies = 3 * d * d * 2 if packed_weights.fp16_available() else 0  # float16 matrices
    assert memory.draft_param_bytes == (3 * (d * d + d) + len(DRAFT_VOCAB) * d) * FLOAT32 + copies
    assert memory.draft_kv_bytes == (d + context_rows(drafter) * (d + 1)) * FLOAT32


def test_eagle_adds_its_layer_fc_and_head_rows_and_its_one_layer_cache(tiny_target):
    c = {**TINY, "tie_word_embeddings": True}
    d, head_dim, kv_heads = c["hidden_size"], c["hidden_size"] // c["num_attention_heads"], c["num_key_value_heads"]
    layer = (llama_parameters({**c, "num_hidden_layers": 1, "vocab_size": 0}) - d)  # one decoder layer
    drafter = EagleDrafter(tiny_target, 8, EagleHead(tiny_target.model.config), DRAFT_VOCAB, "e", "")
    memory = tiny_run(tiny_target, drafter)
    assert memory.draft_param_bytes == (2 * d * d + layer + len(DRAFT_VOCAB) * d) * FLOAT32
    cache = 2 * kv_heads * head_dim * (3 + 10 + 3 + 1)
    assert memory.draft_kv_bytes == (cache + context_rows(drafter) * (d + 1)) * FLOAT32


# --- the measured peak ----------------------------------------------------------------------------------

PEAK_PROBE = """
import json, torch
from specdec.engine.metrics import peak_delta_bytes, start_memory_probe
cpu = torch.device("cpu")
probe = start_memory_probe(cpu)
if probe.source is None:
    print(json.dumps(None)); raise SystemExit
block = bytearray(64 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1  # touched: resident
first = peak_delta_bytes(probe, cpu)
del block
print(json.dumps([probe.source, first, peak_delta_bytes(start_memory_probe(cpu), cpu)]))
"""


def test_the_cpu_peak_is_the_rss_high_water_mark_over_the_start_reset_for_each_run():
    """In a process of its own: the peak is the whole process's, and a test worker's other threads (servers,
    runs of earlier tests) may free memory meanwhile."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", PEAK_PROBE], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    if json.loads(out) is None:
        pytest.skip("this system cannot reset the peak RSS (/proc/self/clear_refs)")
    source, first, second = json.loads(out)
    assert source == PEAK_CPU and first >= 64 * 2**20 and second < 32 * 2**20


def test_a_cpu_runs_report_labels_its_peak_coarse(lab_target):
    if start_memory_probe(torch.device("cpu")).source is None:
        pytest.skip("this system cannot reset the peak RSS (/proc/self/clear_refs)")
    memory = generate(lab_target, None, PROMPT, SETTINGS).metrics.memory
    assert memory.peak_source == PEAK_CPU and "coarse" in PEAK_CPU and memory.peak_is_coarse
    assert memory.peak_delta_bytes is not None


def test_the_cuda_peak_comes_from_the_allocator_statistics_reset_at_the_runs_start(monkeypatch):
    state = {"allocated": 300, "peak": 900}
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device: state.update(peak=state["allocated"]))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device: state["allocated"])
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device: state["peak"])
    cuda = torch.device("cuda")
    probe = start_memory_probe(cuda)
    state["peak"] = max(state["peak"], 300 + 250)  # the run's caches and activations; 900 was an earlier run's
    assert probe.source == PEAK_CUDA and peak_delta_bytes(probe, cuda) == 250


# --- the CLI and bench --------------------------------------------------------------------------------

def test_the_summary_line_names_every_part_and_says_when_the_peak_is_coarse():
    memory = MemoryReport("cpu", 40 * 2**20, 2**20, 2**19, 2**18, None, None, verify_kv_bytes=2**10,
                          peak_delta_bytes=3 * 2**20, peak_source=PEAK_CPU)
    line = memory_summary(memory)
    assert "extra 1.3 MiB = draft weights 1.0 MiB + draft KV cache 256.0 KiB + verification slots 1.0 KiB" in line
    assert "3.0 MiB (cpu peak RSS (coarse))" in line


def test_the_cli_json_metrics_carry_every_memory_field(capsys):
    assert main(["generate", "--target", "lab-target", "--draft", "lab-draft-small", "--prompt-ids", "5,17,42",
                 "--max-new-tokens", "8", "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)["metrics"]["memory"]
    assert {"draft_param_bytes", "draft_kv_bytes", "verify_kv_bytes", "extra_bytes", "peak_delta_bytes",
            "peak_source"} <= set(memory)
    assert memory["extra_bytes"] == memory["draft_param_bytes"] + memory["draft_kv_bytes"] + memory["verify_kv_bytes"]


def test_bench_prints_and_reports_the_memory_of_our_runs(capsys):
    assert main(["bench", "--target", "lab-target", "--draft", "prompt-lookup", "--no-chat", "--prompt-ids",
                 "5,17,42,5,17", "--k", "3", "--max-new-tokens", "8", "--repeats", "1"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    report = json.loads(out[-1])
    assert set(report["memory"]) == {"ours: target only", "ours: prompt lookup"}
    assert report["memory"]["ours: prompt lookup"]["verify_kv_bytes"] == 3 * kv_per_position(config_of("lab-target"))
    assert any(line.startswith("ours: prompt lookup: memory: extra") for line in out)


def test_generate_without_json_prints_the_memory_line_on_stderr(capsys):
    assert main(["generate", "--target", "lab-target", "--draft", "prompt-lookup", "--prompt-ids", "5,17,42",
                 "--max-new-tokens", "4"]) == 0
    assert "memory: extra" in capsys.readouterr().err
