"""Greedy speculative decoding emits exactly the target's own greedy tokens (float32)."""
from specdec import DecodeSettings, generate, load_model, start

import pytest
import torch

from tests.switching import FlappingSchedule, decisions
from tests.tiny_models import build_model, perturbed_copy, save, tiny_config

ARCHS = ["llama", "gpt2", "qwen2", "gpt_neox"]
PROMPT = [3, 17, 42, 8, 61]
NEW_TOKENS = 32


def hf_greedy(loaded, prompt, max_new_tokens, eos_token_id=None):
    out = loaded.model.generate(
        torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        do_sample=False, max_new_tokens=max_new_tokens, eos_token_id=eos_token_id, pad_token_id=0,
    )
    return out[0, len(prompt):].tolist()


@pytest.fixture(scope="module", params=ARCHS)
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    target = build_model(tiny_config(request.param), seed=0)
    draft = perturbed_copy(target, noise=0.3, seed=1)
    return load_model(save(target, folder / "target")), load_model(save(draft, folder / "draft"))


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_greedy_output_equals_target_generate(pair, k):
    target, draft = pair
    result = generate(target, draft, PROMPT, DecodeSettings(k=k, max_new_tokens=NEW_TOKENS))
    assert result.token_ids == hf_greedy(target, PROMPT, NEW_TOKENS)


def test_pair_mixes_accepted_and_rejected_drafts(pair):
    """Guards the identity test against a draft that is always right or always wrong."""
    target, draft = pair
    metrics = generate(target, draft, PROMPT, DecodeSettings(k=4, max_new_tokens=NEW_TOKENS)).metrics
    assert 0.0 < metrics.acceptance_rate < 1.0


def test_baseline_equals_target_generate(pair):
    target, _ = pair
    result = generate(target, None, PROMPT, DecodeSettings(max_new_tokens=NEW_TOKENS))
    assert result.token_ids == hf_greedy(target, PROMPT, NEW_TOKENS)


@pytest.mark.parametrize("max_new_tokens", [1, 2, 4, 5, 6, 9])
def test_exactly_max_new_tokens_are_emitted(pair, max_new_tokens):
    target, draft = pair
    result = generate(target, draft, PROMPT, DecodeSettings(k=4, max_new_tokens=max_new_tokens))
    assert result.token_ids == hf_greedy(target, PROMPT, NEW_TOKENS)[:max_new_tokens]


@pytest.fixture(scope="module")
def eos_inside_draft(tmp_path_factory):
    """Target = draft (every draft accepted), EOS = a token the greedy run emits mid-draft."""
    folder = tmp_path_factory.mktemp("eos")
    model = build_model(tiny_config("llama"), seed=3)
    reference = hf_greedy(load_model(save(model, folder / "plain")), PROMPT, 24)
    # K=4 with an always-right draft: output positions 0-3, 5-8, ... are drafted, 4, 9, ... are bonus
    position = next(i for i, token in enumerate(reference) if i % 5 not in (3, 4) and reference.index(token) == i)
    eos = reference[position]
    loaded = load_model(save(model, folder / "with_eos", eos_token_id=eos))
    return loaded, reference, position, eos


def test_eos_inside_a_draft_ends_generation_at_once(eos_inside_draft):
    loaded, reference, position, eos = eos_inside_draft
    result = generate(loaded, loaded, PROMPT, DecodeSettings(k=4, max_new_tokens=24))
    assert result.token_ids == reference[: position + 1]
    assert result.token_ids == hf_greedy(loaded, PROMPT, 24, eos_token_id=eos)
    last = result.events[-1]
    assert (last.stop_reason, last.final) == ("eos", None)
    assert len(last.emitted_ids) < last.k  # drafted tokens after EOS were dropped


@pytest.mark.parametrize("k", [2, 4])
def test_greedy_output_is_unchanged_while_speculation_switches_off_and_on(pair, k):
    """The auto schedule's plain steps (off), K = 1 probes and speculative steps, mixed all run long."""
    target, draft = pair
    run = start(target, draft, PROMPT, DecodeSettings(k=k, max_new_tokens=NEW_TOKENS), schedule=FlappingSchedule(k))
    result = run.result()
    assert decisions(result.events) == {"speculate", "off", "probe"}
    assert result.token_ids == hf_greedy(target, PROMPT, NEW_TOKENS)


def test_greedy_output_is_unchanged_under_the_auto_schedule(pair):
    target, draft = pair
    result = generate(target, draft, PROMPT, DecodeSettings(k=4, max_new_tokens=NEW_TOKENS, k_schedule="auto"))
    assert all(e.decision for e in result.events)
    assert result.token_ids == hf_greedy(target, PROMPT, NEW_TOKENS)
