"""vLLM's per-step record -> the lab's StepEvents (pure), and its figures in words. No server needed."""
from specdec.engine.events import DecodeSettings
from specdec.engine.theory import measured_alpha, position_counts
from specdec.vllm.fates import NOT_EXPOSED, AlignmentError, align, align_steps, build_events, run_result
from specdec.vllm.report import acceptance_by_position_text, alignment_text, vllm_figures_text

import pytest


def events_for(chunk_sizes, accepted, drafted, finish="length"):
    n = sum(chunk_sizes)
    ids = list(range(100, 100 + n))
    texts = [f"t{i}" for i in range(n)]
    times = [0.1 * (i + 1) for i in range(len(chunk_sizes))]
    return build_events(ids, texts, chunk_sizes, times, accepted, drafted, finish)


def test_every_verification_step_gives_its_accepted_drafts_then_one_target_token():
    # prefill token, then steps accepting 2 of 3 (correction), 3 of 3 (bonus), 0 of 3 (correction)
    events, alignment = events_for([1, 3, 4, 1], [2, 3, 0], [3, 3, 3])
    assert alignment.exact
    assert [len(e.emitted_ids) for e in events] == [1, 3, 4, 1]
    assert [e.final.kind for e in events] == ["target", "resampled", "bonus", "resampled"]
    accepted_tokens = [d for e in events for d in e.drafted if d.accepted]
    assert len(accepted_tokens) == 2 + 3 + 0  # the sum of per_step_accepted
    assert [e.num_accepted for e in events[1:]] == [2, 3, 0]
    # the accepted drafts carry the streamed ids and texts; rejected ones are not exposed
    assert [d.token_id for d in events[1].drafted] == [101, 102, -1]
    assert events[1].drafted[2].text == NOT_EXPOSED and events[1].drafted[2].fate == "rejected"
    assert events[3].drafted[1].fate == "unchecked"
    assert events[1].final.token_id == 103 and events[1].final.p is None and events[1].drafted[0].q is None


def test_acceptance_figures_follow_vllms_definitions():
    events, _ = events_for([1, 3, 4, 1], [2, 3, 0], [3, 3, 3])
    result = run_result(events, [1, 2], 1.0, DecodeSettings(max_new_tokens=9), "m", "vllm ngram K=3")
    assert result.metrics.acceptance_rate == pytest.approx(5 / 9)  # vLLM's draft_acceptance_rate
    assert measured_alpha(events) == pytest.approx(5 / 7)  # evaluated: accepted + the first rejection per step
    assert [r[1:] for r in position_counts(events)] == [(3, 3, 2), (3, 2, 2), (3, 2, 1)]
    assert result.metrics.tokens_per_forward == pytest.approx(9 / 4)  # prefill counted
    assert result.metrics.tokens_per_s == pytest.approx(9.0)
    assert "1: 0.67 (2/3)" in acceptance_by_position_text(events)


def test_plain_steps_are_placed_by_the_stream_chunks():
    # a plain step (ngram found nothing) between two verification steps: chunk sizes fix where
    events, alignment = events_for([1, 3, 1, 2], [2, 1], [4, 4])
    assert [e.k for e in events] == [0, 4, 0, 4]
    assert [e.final.kind for e in events] == ["target", "resampled", "target", "resampled"]
    assert alignment.exact


def test_one_token_steps_in_either_order_are_flagged_not_exact():
    alignment = align([1, 1, 1, 2], [0, 1])
    assert not alignment.exact
    assert "more than one order" in alignment_text(alignment)


def test_the_last_step_may_be_cut_by_the_requests_end():
    events, alignment = events_for([1, 2, 2], [1, 3], [3, 3], finish="stop")
    assert alignment.exact
    last = events[-1]
    assert last.final is None and len(last.emitted_ids) == 2 and last.stop_reason == "eos"
    result = run_result(events, [1], 1.0, DecodeSettings(), "m", None)
    assert result.text == "t0t1t2t3"  # the stop token's text is left out, as the lab's engine does


def test_records_that_do_not_fit_the_tokens_are_refused():
    with pytest.raises(AlignmentError):
        align([1, 1], [0, 0])  # two verification steps need two tokens after the prefill's
    with pytest.raises(AlignmentError):
        align_steps([1, 2], [3])  # 4 tokens in a 2-token chunk, and no cut allowed
    with pytest.raises(AlignmentError):
        events_for([1, 2], [1], [2, 2])


def test_a_server_without_speculation_gives_plain_steps():
    events, alignment = events_for([1, 1, 1], [], [])
    assert [e.final.kind for e in events] == ["target"] * 3 and alignment.exact
    assert "none" in vllm_figures_text(None)


def test_a_chunk_carrying_several_steps_splits_its_time():
    events, _ = events_for([1, 5], [1, 2], [2, 2])
    assert [len(e.emitted_ids) for e in events] == [1, 2, 3]
    assert events[1].other_time_s == pytest.approx(0.05) and events[2].other_time_s == pytest.approx(0.05)


def test_the_ngram_replay_drafts_as_vllms_proposer():
    from specdec.vllm.ngram_replay import propose

    assert propose([1, 2, 3, 9, 1, 2, 3], 2, 3, 4, 100) == [9, 1, 2, 3]  # the longest n-gram first
    assert propose([5, 1, 2, 7, 1, 2], 2, 3, 4, 100) == [7, 1, 2]  # never past the context's end
    assert propose([1, 2, 8, 1, 2, 9, 1, 2], 2, 3, 4, 100) == [8, 1, 2, 9]  # the earliest occurrence
    assert propose([1, 2, 3], 2, 3, 4, 100) == []
    assert propose([1, 2, 8, 1, 2], 2, 3, 4, 6) == [8]  # capped by max_model_len


def test_the_ngram_replay_places_plain_steps_and_names_rejected_drafts():
    from specdec.vllm.ngram_replay import replay

    config = {"prompt_lookup_min": 2, "prompt_lookup_max": 3, "num_speculative_tokens": 2}
    # after [5, 6, 7, 1, 2, 9, 1, 2] vLLM would draft [9, 1] (what followed the earliest [1, 2]); a record saying
    # one draft was accepted while the next token is 7, not 9, disagrees: no replay
    steps = replay([5, 6, 7, 1, 2], [9, 1, 2, 7, 4], [1], [2], config, 100)
    assert steps is None
    steps = replay([5, 1, 2, 7, 3], [1, 2, 7, 4], [1], [2], config, 100)
    assert steps == [(1, None, []), (1, None, []), (2, 0, [7, 3])]
    events, alignment = build_events([1, 2, 7, 4], ["a", "b", "c", "d"], [1, 1, 2], [0.1, 0.2, 0.3], [1], [2],
                                     "length", steps, text_of=lambda i: f"<{i}>")
    assert alignment.exact and [e.k for e in events] == [0, 0, 2]
    assert events[2].drafted[1].token_id == 3 and events[2].drafted[1].text == "<3>"
    assert events[2].drafted[1].fate == "rejected" and events[2].final.text == "d"
