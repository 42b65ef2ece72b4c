"""vLLM's per-request speculative record in both its shapes (fates.spec_record), as captured-style payloads: v0.32's
top-level `metrics.speculative_decoding` and the newer per-choice `speculative_decoding_stats` with a sparse
histogram, streamed on the final (usage) chunk. No server needed."""
from specdec.vllm.client import Completion, _read_event
from specdec.vllm.fates import PER_CHOICE, TOP_LEVEL, spec_record

# v0.32, --per-request-spec-decode-metrics detailed: the usage chunk of a stream (no choices)
V032_USAGE_CHUNK = {
    "id": "cmpl-1", "object": "text_completion", "created": 1765000000, "model": "smollm2", "choices": [],
    "usage": {"prompt_tokens": 12, "total_tokens": 21, "completion_tokens": 9},
    "metrics": {"speculative_decoding": {
        "mean_acceptance_length": 2.0, "draft_acceptance_rate": 0.5, "acceptance_histogram": [1, 1, 0, 1],
        "num_spec_steps": 3, "num_accepted_draft_tokens": 4, "num_draft_tokens": 8,
        "per_step_accepted": [0, 1, 3], "per_step_drafted": [3, 2, 3]}},
}
# the newer shape, --per-request-spec-decode-stats: per choice, a sparse histogram, on the final chunk with usage
NEWER_FINAL_CHUNK = {
    "id": "cmpl-2", "object": "text_completion", "created": 1765000001, "model": "smollm2",
    "choices": [{"index": 0, "text": "", "token_ids": None, "logprobs": None, "finish_reason": "stop",
                 "speculative_decoding_stats": {
                     "num_spec_steps": 3, "num_draft_tokens": 8, "num_accepted_draft_tokens": 4,
                     "mean_acceptance_length": 2.33, "draft_acceptance_rate": 0.5,
                     "acceptance_histogram": {"0": 1, "1": 1, "3": 1}}}],
    "usage": {"prompt_tokens": 12, "total_tokens": 21, "completion_tokens": 9},
}
NEWER_RESPONSE = {  # the same record in a whole (not streamed) response
    "id": "cmpl-3", "object": "text_completion", "model": "smollm2",
    "choices": [{"index": 0, "text": "Hello", "finish_reason": "length",
                 "speculative_decoding_stats": NEWER_FINAL_CHUNK["choices"][0]["speculative_decoding_stats"]}],
}


def test_the_v032_record_is_read_with_its_shape_named():
    record = spec_record(V032_USAGE_CHUNK)
    assert record["shape"] == TOP_LEVEL
    assert record["per_step_accepted"] == [0, 1, 3] and record["acceptance_histogram"] == [1, 1, 0, 1]


def test_the_newer_per_choice_record_is_read_with_its_sparse_histogram_made_dense():
    record = spec_record(NEWER_RESPONSE)
    assert record["shape"] == PER_CHOICE
    assert record["acceptance_histogram"] == [1, 1, 0, 1] and record["num_accepted_draft_tokens"] == 4


def test_a_payload_without_a_record_gives_none():
    assert spec_record({"choices": [{"index": 0, "text": "x", "token_ids": [5]}]}) is None


def test_the_streamed_final_chunk_of_either_shape_gives_the_completion_its_record_and_usage():
    for chunk, shape in ((V032_USAGE_CHUNK, TOP_LEVEL), (NEWER_FINAL_CHUNK, PER_CHOICE)):
        done = Completion()
        assert _read_event({"choices": [{"index": 0, "text": "Hi", "token_ids": [7], "logprobs": {"tokens": ["Hi"]},
                                         "finish_reason": None}]}, done, 0.1) is not None
        assert _read_event(chunk, done, 0.2) is None  # carries no tokens
        assert done.spec["shape"] == shape and done.spec["num_spec_steps"] == 3 and done.usage["completion_tokens"] == 9
