"""Step events describe exactly what was emitted, and metrics follow from them."""
from specdec import DecodeSettings, generate, load_model, start

import pytest

from tests.tiny_models import build_model, perturbed_copy, save, tiny_config

PROMPT = [5, 9, 13, 2]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("trace")
    target = build_model(tiny_config("llama"), seed=0)
    return (load_model(save(target, root / "target")),
            load_model(save(perturbed_copy(target, noise=0.3, seed=1), root / "draft")))


SETTINGS = [DecodeSettings(k=4, max_new_tokens=40), DecodeSettings(k=4, max_new_tokens=40, temperature=1.0, seed=3)]


@pytest.mark.parametrize("settings", SETTINGS, ids=["greedy", "sampling"])
def test_draft_equal_to_target_accepts_everything(models, settings):
    target, _ = models
    metrics = generate(target, target, PROMPT, settings).metrics
    assert metrics.acceptance_rate == 1.0
    assert metrics.tokens_per_forward == pytest.approx(40 / metrics.target_forwards)


@pytest.mark.parametrize("settings", SETTINGS, ids=["greedy", "sampling"])
def test_events_concatenate_to_the_output(models, settings):
    target, draft = models
    result = generate(target, draft, PROMPT, settings)
    assert [t for e in result.events for t in e.emitted_ids] == result.token_ids


@pytest.mark.parametrize("settings", SETTINGS, ids=["greedy", "sampling"])
def test_each_step_emits_its_accepted_drafts_then_the_target_token(models, settings):
    target, draft = models
    for event in generate(target, draft, PROMPT, settings).events:
        accepted = [d.token_id for d in event.drafted if d.accepted]
        assert [d.accepted for d in event.drafted] == [i < event.num_accepted for i in range(event.k)]
        assert event.emitted_ids == accepted + [event.final.token_id]
        expected = "target" if event.k == 0 else "bonus" if event.num_accepted == event.k else "resampled"
        assert event.final.kind == expected


def test_greedy_trace_marks_acceptance_by_target_argmax(models):
    target, draft = models
    for event in generate(target, draft, PROMPT, SETTINGS[0]).events:
        for d in event.drafted[: event.num_accepted + 1]:
            assert d.evaluated and d.accept_prob == (1.0 if d.accepted else 0.0)
            assert d.accepted == (d.target_top[0].token_id == d.token_id)
        assert event.final.target_top[0].token_id == event.final.token_id


def test_sampled_trace_records_the_uniform_draw_that_decided(models):
    target, draft = models
    for event in generate(target, draft, PROMPT, SETTINGS[1]).events:
        for d in event.drafted:
            if d.evaluated:
                assert d.accepted == (d.uniform < d.accept_prob)
                assert d.accept_prob == pytest.approx(min(1.0, d.p / d.q), rel=1e-5)
            else:
                assert d.uniform is None and not d.accepted


def test_resampled_tokens_carry_the_residual_distribution(models):
    target, draft = models
    finals = [e.final for e in generate(target, draft, PROMPT, SETTINGS[1]).events if e.final.kind == "resampled"]
    assert finals, "the perturbed draft should be rejected at least once"
    for final in finals:
        assert final.residual_top and sum(t.prob for t in final.residual_top) <= 1.0 + 1e-5


def test_metrics_follow_from_the_events(models):
    target, draft = models
    result = generate(target, draft, PROMPT, SETTINGS[0])
    m, events = result.metrics, result.events
    assert m.drafted_tokens == sum(e.k for e in events)
    assert m.accepted_tokens == sum(e.num_accepted for e in events)
    assert m.acceptance_rate == pytest.approx(m.accepted_tokens / m.drafted_tokens)
    assert m.target_forwards == len(events)
    assert m.draft_forwards == m.drafted_tokens
    assert m.acceptance_by_position[0] == pytest.approx(sum(e.num_accepted > 0 for e in events) / sum(e.k > 0 for e in events))
    assert 0 < m.forward_time_s <= m.wall_time_s


def test_baseline_steps_are_single_target_tokens(models):
    target, _ = models
    result = generate(target, None, PROMPT, DecodeSettings(max_new_tokens=10))
    assert [(e.k, len(e.emitted_ids), e.final.kind) for e in result.events] == [(0, 1, "target")] * 10
    assert result.metrics.acceptance_rate is None and result.metrics.tokens_per_forward == 1.0


def test_memory_report_counts_weights_and_kv_cache(models):
    target, draft = models
    memory = generate(target, draft, PROMPT, SETTINGS[0]).metrics.memory
    config = target.model.config
    head_dim = config.hidden_size // config.num_attention_heads
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * 4  # K and V, float32
    assert memory.target_param_bytes == sum(p.numel() * 4 for p in target.model.parameters())
    assert memory.target_kv_bytes % per_token == 0 and memory.target_kv_bytes >= per_token * (len(PROMPT) + 39)
    assert memory.draft_kv_bytes > 0 and memory.process_rss_bytes > 0


def test_stopping_early_keeps_what_was_produced(models):
    target, draft = models
    run = start(target, draft, PROMPT, SETTINGS[0])
    first = next(run)
    run.close()
    result = run.result()
    assert result.token_ids == first.emitted_ids and len(result.events) == 1


def test_same_seed_same_sample_different_seed_different_sample(models):
    target, draft = models
    sample = lambda seed: generate(target, draft, PROMPT, DecodeSettings(k=4, max_new_tokens=30, temperature=1.0, seed=seed)).token_ids
    assert sample(7) == sample(7)
    assert sample(7) != sample(8)
