"""vLLM's ngram drafting replayed on the client: exact step boundaries and the rejected drafts' ids.

vLLM's ngram proposer (vllm/v1/spec_decode/ngram_proposer.py, 0.32) is deterministic: before each decoding
step it looks in prompt + output for the longest n-gram (prompt_lookup_min..max tokens) that ends the context
and occurs earlier, takes its earliest occurrence and proposes up to K tokens that followed it (never past the
context's end or max_model_len); no match, no draft. Replaying it on the streamed tokens places every plain
step, and names the draft tokens vLLM rejected. The replay is checked against vLLM's own record (the drafted
count of every verification step, and that the accepted drafts are the emitted tokens); any disagreement
(another vLLM version, asynchronous scheduling) returns None and the stream's chunks are used instead (fates.py).
"""
from __future__ import annotations

from typing import Optional


def propose(context: list[int], min_n: int, max_n: int, k: int, max_model_len: int) -> list[int]:
    """The tokens vLLM's ngram proposer drafts after `context`."""
    total = len(context)
    k = min(k, max_model_len - total)
    if total < min_n or k <= 0:
        return []
    for n in range(min(max_n, total - 1), min_n - 1, -1):
        suffix = context[total - n:]
        for j in range(total - n):  # an earlier occurrence, ending before the context's last token
            if context[j: j + n] == suffix:
                start = j + n
                return context[start: start + min(k, total - start)]
    return []


def replay(prompt_ids: list[int], out_ids: list[int], accepted: list[int], drafted: list[int], config: dict,
           max_model_len: int) -> Optional[list[tuple[int, Optional[int], list[int]]]]:
    """Per step (the prefill's first): (tokens emitted, index into per_step_*, or None for a plain step, the
    proposal); None when the replay disagrees with vLLM's record."""
    min_n, max_n = int(config.get("prompt_lookup_min", 1)), int(config.get("prompt_lookup_max", 1))
    k = int(config.get("num_speculative_tokens", 0))
    steps: list[tuple[int, Optional[int], list[int]]] = [(1, None, [])] if out_ids else []
    t, i = 1, 0
    while t < len(out_ids):
        proposal = propose(list(prompt_ids) + out_ids[:t], min_n, max_n, k, max_model_len)
        if not proposal:
            steps.append((1, None, []))
            t += 1
            continue
        if i >= len(accepted) or drafted[i] != len(proposal):
            return None
        a = accepted[i]
        size = min(a + 1, len(out_ids) - t)
        kept = min(a, size)
        if out_ids[t: t + kept] != proposal[:kept]:
            return None
        steps.append((size, i, proposal))
        t, i = t + size, i + 1
    return steps if i == len(accepted) else None
