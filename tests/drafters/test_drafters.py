"""Drafters other than a same-tokenizer draft model, and K schedules: greedy output is the target's own."""
from specdec import DecodeSettings, InvalidSettingsError, generate, load_model
from specdec.drafters.prompt_lookup import find_continuation
from specdec.drafters.registry import load_drafter
from specdec.drafters.retokenised import ReTokenisedDrafter
from specdec.engine.schedules import SCHEDULES

import pytest
import torch
from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

from tests.engine.test_engine_greedy_identity import hf_greedy, pair  # noqa: F401 (pair: the fixture, one per architecture)
from tests.tiny_models import build_model, save, tiny_config
from tests.tiny_tokenizers import WORDS, word_tokenizer

REPEATING_PROMPT = [3, 17, 42, 8, 61, 3, 17, 42, 9, 5, 3, 17]
NEW_TOKENS = 40


def transformers_lookup(seq: list[int], k: int) -> list[int]:
    generator = PromptLookupCandidateGenerator(num_output_tokens=k, max_matching_ngram_size=2, max_length=10_000)
    candidates, _ = generator.get_candidates(torch.tensor([seq]))
    return candidates[0, len(seq):].tolist()


@pytest.mark.parametrize("seed", range(20))
def test_prompt_lookup_proposes_what_transformers_proposes(seed):
    generator = torch.Generator().manual_seed(seed)
    seq = torch.randint(0, 5, (int(torch.randint(2, 30, (1,), generator=generator)),), generator=generator).tolist()
    assert find_continuation(seq, 4) == transformers_lookup(seq, 4)


def test_prompt_lookup_proposes_nothing_without_an_earlier_match():
    assert find_continuation([1, 2, 3, 4], 4) == []


def test_prompt_lookup_prefers_the_longer_ngram():
    # the 1-gram [7] first occurs before 1, the 2-gram [5, 7] before 2
    assert find_continuation([7, 1, 5, 7, 2, 9, 5, 7], 2) == [2, 9]


@pytest.mark.parametrize("k", [1, 3, 6])
def test_prompt_lookup_greedy_output_equals_target_generate(pair, k):
    target, _ = pair
    drafter = load_drafter("prompt-lookup", target)
    result = generate(target, drafter, REPEATING_PROMPT, DecodeSettings(k=k, max_new_tokens=NEW_TOKENS))
    assert result.token_ids == hf_greedy(target, REPEATING_PROMPT, NEW_TOKENS)


def test_prompt_lookup_runs_plain_target_steps_where_nothing_matches(pair):
    """Guards the identity test: some steps draft and some do not (recorded with k = 0)."""
    target, _ = pair
    events = generate(target, load_drafter("prompt-lookup", target), REPEATING_PROMPT,
                      DecodeSettings(k=3, max_new_tokens=NEW_TOKENS)).events
    assert any(e.k > 0 for e in events) and any(e.k == 0 and e.final.kind == "target" for e in events[:-1])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_k_schedule_keeps_greedy_output_equal_to_target_generate(pair, schedule):
    target, draft = pair
    result = generate(target, draft, REPEATING_PROMPT,
                      DecodeSettings(k=6, max_new_tokens=NEW_TOKENS, k_schedule=schedule))
    assert result.token_ids == hf_greedy(target, REPEATING_PROMPT, NEW_TOKENS)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_k_schedule_keeps_prompt_lookup_greedy_output_equal(pair, schedule):
    target, _ = pair
    result = generate(target, load_drafter("prompt-lookup", target), REPEATING_PROMPT,
                      DecodeSettings(k=6, max_new_tokens=NEW_TOKENS, k_schedule=schedule))
    assert result.token_ids == hf_greedy(target, REPEATING_PROMPT, NEW_TOKENS)


def test_heuristic_schedule_changes_k_between_steps(pair):
    target, draft = pair
    events = generate(target, draft, REPEATING_PROMPT,
                      DecodeSettings(k=6, max_new_tokens=NEW_TOKENS, k_schedule="heuristic")).events
    assert len({e.k_planned for e in events}) > 1


def test_each_step_records_the_k_its_schedule_planned(pair):
    target, draft = pair
    events = generate(target, draft, REPEATING_PROMPT, DecodeSettings(k=5, max_new_tokens=NEW_TOKENS)).events
    assert all(e.k_planned == 5 and e.k <= 5 for e in events)


def test_unknown_k_schedule_is_refused():
    with pytest.raises(InvalidSettingsError, match="K schedule"):
        from specdec.engine.events import check_settings
        check_settings(DecodeSettings(k_schedule="fastest"))


# --- a draft model with a different tokenizer --------------------------------------------------

def permuted_vocabulary_pair(folder):
    """A target and a draft that computes the same function over a shuffled vocabulary, each with a
    word tokenizer whose ids follow its own model (specials <unk>=0 and <eos>=1 stay in place)."""
    target_tok = word_tokenizer(WORDS)
    vocab = len(target_tok)
    generator = torch.Generator().manual_seed(0)
    perm = torch.cat([torch.tensor([0, 1]), 2 + torch.randperm(vocab - 2, generator=generator)])
    inverse = torch.argsort(perm)  # draft id -> target id
    target = build_model(tiny_config("llama", vocab_size=vocab), seed=4)
    draft = build_model(tiny_config("llama", vocab_size=vocab), seed=4)
    with torch.no_grad():
        draft.model.embed_tokens.weight.copy_(target.model.embed_tokens.weight[inverse])
        draft.lm_head.weight.copy_(target.lm_head.weight[inverse])
    by_target_id = {i: w for w, i in target_tok.get_vocab().items()}
    draft_words = [by_target_id[int(t)] for t in inverse[2:]]
    draft_tok = word_tokenizer(draft_words)
    assert draft_tok.get_vocab() != target_tok.get_vocab()
    for model, tok, name in ((target, target_tok, "target"), (draft, draft_tok, "draft")):
        save(model, folder / name)
        tok.save_pretrained(folder / name)
    return load_model(str(folder / "target")), load_model(str(folder / "draft"))


@pytest.fixture(scope="module")
def retokenised_pair(tmp_path_factory):
    return permuted_vocabulary_pair(tmp_path_factory.mktemp("retok"))


def test_a_draft_with_another_tokenizer_becomes_a_retokenised_drafter(retokenised_pair):
    target, draft = retokenised_pair
    assert isinstance(load_drafter(str(draft.source), target), ReTokenisedDrafter)


def test_retokenised_draft_greedy_output_equals_target_alone(retokenised_pair):
    target, draft = retokenised_pair
    prompt = target.encode("the cat sat on a mat and then")
    drafter = load_drafter(str(draft.source), target)
    result = generate(target, drafter, prompt, DecodeSettings(k=4, max_new_tokens=24))
    assert result.token_ids == generate(target, None, prompt, DecodeSettings(max_new_tokens=24)).token_ids
    assert result.metrics.acceptance_rate > 0.5  # the same function, so its words are mostly accepted


def test_retokenised_draft_refuses_sampling(retokenised_pair):
    target, draft = retokenised_pair
    with pytest.raises(InvalidSettingsError, match="greedy"):
        generate(target, load_drafter(str(draft.source), target), [2, 3], DecodeSettings(temperature=1.0))
