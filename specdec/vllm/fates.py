"""vLLM's per-request speculative-decoding record -> the lab's StepEvents (pure: no HTTP, no torch).

vLLM (0.32, `--per-request-spec-decode-metrics detailed`) reports, per request, the ordered lists
per_step_accepted / per_step_drafted: verification step i proposed d_i draft tokens and accepted a_i of
them. The output token ids (streamed with `return_token_ids`) then read as:

    the prefill's token (the target's own)  |  step 1: a_1 accepted drafts + 1 target token  |  step 2: …

where the target token closing a step is a **bonus** when a_i = d_i and a **correction** otherwise (the
same fates as the lab's engine). Decoding steps in which the drafter proposed nothing (ngram found no
match) are not in vLLM's lists: each adds one plain target token somewhere. For ngram the lab replays vLLM's
proposer (ngram_replay.py), which places them exactly and names the rejected drafts; otherwise, or when the
replay disagrees with vLLM's record, their places come from the stream: vLLM sends each engine step's tokens in one delta, so a chunk never splits a step and the chunk
sizes fix where plain steps fall. When two decompositions fit (a plain step next to a step that accepted
nothing: both one token) the order is a guess, and `Alignment.exact` says so.

vLLM's record comes in two shapes, both experimental, both read by spec_record: v0.32's top-level
`metrics.speculative_decoding` (`--per-request-spec-decode-metrics detailed`, a dense acceptance_histogram) and the
newer per choice `speculative_decoding_stats` (`--per-request-spec-decode-stats`, a sparse histogram
{accepted drafts: steps}); streamed, either arrives on the final (usage) chunk.

What vLLM does not expose is left out, not invented: the draft's probabilities q, the target's p, the
uniform draws, and the ids of rejected or unchecked draft tokens (shown as "?"). Step times are the
client's arrival intervals of the stream's chunks, split evenly over the steps a chunk carries.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from specdec.engine.events import DecodeSettings, DraftToken, FinalToken, RunResult, StepEvent
from specdec.engine.theory import run_record

NOT_EXPOSED = "?"  # the text of a draft token vLLM rejected: its id is not in the API's answer
TOP_LEVEL = "metrics.speculative_decoding (vLLM 0.32)"  # the record's shapes, as a run's details name them
PER_CHOICE = "choices[].speculative_decoding_stats"


def spec_record(payload: dict) -> Optional[dict]:
    """vLLM's per-request speculative record in a response or streamed chunk, whichever shape it has: its fields
    as sent, the acceptance histogram dense (entry a: the steps that accepted a drafts) and `shape` (TOP_LEVEL or
    PER_CHOICE); None where the payload carries none."""
    record, shape = (payload.get("metrics") or {}).get("speculative_decoding"), TOP_LEVEL
    if not isinstance(record, dict):
        choices = [c for c in payload.get("choices") or [] if isinstance(c, dict)]
        record = next((c["speculative_decoding_stats"] for c in choices
                       if isinstance(c.get("speculative_decoding_stats"), dict)), None)
        shape = PER_CHOICE
    if record is None:
        return None
    return {**record, "acceptance_histogram": dense_histogram(record.get("acceptance_histogram")), "shape": shape}


def dense_histogram(histogram) -> Optional[list[int]]:
    """[steps that accepted 0, 1, … drafts] from a dense list or a sparse {accepted: steps} map (keys may be text)."""
    if histogram is None or isinstance(histogram, list):
        return histogram
    counts = {int(accepted): int(steps) for accepted, steps in histogram.items()}
    return [counts.get(a, 0) for a in range(max(counts, default=-1) + 1)]


@dataclass(frozen=True)
class Alignment:
    """Step sizes (tokens each step emitted; the first is the prefill's) and each step's spec index."""

    sizes: tuple[int, ...]
    spec_index: tuple[Optional[int], ...]  # index into per_step_* for a verification step, None: plain step
    exact: bool  # the only decomposition the chunk sizes allow


class AlignmentError(ValueError):
    pass


def align_steps(chunk_sizes: list[int], accepted: list[int], allow_cut: bool = False) -> Alignment:
    """Splits the streamed tokens (chunk_sizes: tokens per chunk) into steps: the prefill's token, each
    verification step i (a_i + 1 tokens; the last may be cut short by max tokens or a stop token) and
    plain steps (1 token) wherever the chunk boundaries need them. Spec steps are tried first; `exact`
    is False when another decomposition also fits. allow_cut: the last verification step may emit fewer than
    a + 1 tokens (max tokens or a stop token ended the request inside it)."""
    tokens = sum(chunk_sizes)
    if tokens == 0:
        return Alignment((), (), True)
    ends = set()
    total = 0
    for size in chunk_sizes:
        total += size
        ends.add(total)
    chunk_end = {t: min(e for e in ends if e > t) for t in range(tokens)}
    starts = {0} | ends  # a cut step is the last chunk's only step (vLLM sends each step's delta on its own)

    @lru_cache(maxsize=None)
    def ways(t: int, i: int) -> int:
        """Decompositions (capped at 2) of tokens t.. using spec steps i.."""
        if t == tokens:
            return int(i == len(accepted))
        found = 0
        for size, next_i in _options(t, i):
            found += ways(t + size, next_i)
            if found >= 2:
                return 2
        return found

    def _options(t: int, i: int):
        end = chunk_end[t]
        if i < len(accepted):
            size = accepted[i] + 1
            if t + size <= end:
                yield size, i + 1
            elif allow_cut and i == len(accepted) - 1 and end == tokens and t in starts:  # cut by the request's end
                yield tokens - t, i + 1
        yield 1, i

    t_ways = ways(1, 0)  # the prefill's token is a step of its own
    if t_ways:
        sizes, spec = [1], [None]
        t, i = 1, 0
        while t < tokens:
            size, next_i = next((s, n) for s, n in _options(t, i) if ways(t + s, n))
            sizes.append(size)
            spec.append(i if next_i > i else None)
            t, i = t + size, next_i
        return Alignment(tuple(sizes), tuple(spec), t_ways == 1)
    raise AlignmentError(f"{tokens} streamed tokens in chunks {chunk_sizes} do not fit {len(accepted)} "
                         f"verification steps accepting {accepted}")


def align(chunk_sizes: list[int], accepted: list[int]) -> Alignment:
    """align_steps, falling back to ignoring chunk boundaries (one chunk) when they fit no decomposition
    (a server that merges steps' deltas differently); the result is then exact only without plain steps."""
    for allow_cut in (False, True):  # a cut last step only where the tokens fit no other way
        try:
            return align_steps(chunk_sizes, accepted, allow_cut)
        except AlignmentError:
            continue
    whole = align_steps([sum(chunk_sizes)], accepted, allow_cut=True)
    plain = sum(1 for s in whole.spec_index[1:] if s is None)
    return Alignment(whole.sizes, whole.spec_index, whole.exact and plain == 0)


def build_events(token_ids: list[int], texts: list[str], chunk_sizes: list[int], chunk_times: list[float],
                 accepted: list[int], drafted: list[int], stop_reason: Optional[str] = None,
                 replayed: Optional[list] = None, text_of=None) -> tuple[list[StepEvent], Alignment]:
    """StepEvents for a vLLM completion: accepted drafts, rejected and unchecked drafts ("?" unless known), and
    the target's token that ends each step (correction / bonus; "target" for the prefill and plain steps).
    chunk_times: each chunk's arrival, in seconds since the request was sent. replayed: the steps of an ngram
    replay (ngram_replay.replay), exact, with each step's proposal; text_of(id): a proposed token's text."""
    if len(accepted) != len(drafted):
        raise AlignmentError(f"per_step_accepted has {len(accepted)} entries, per_step_drafted {len(drafted)}")
    if replayed is not None:
        alignment = Alignment(tuple(s for s, _, _ in replayed), tuple(i for _, i, _ in replayed), True)
        proposals = [p for _, _, p in replayed]
    else:
        alignment, proposals = align(chunk_sizes, accepted), None
    step_times = _step_times(alignment.sizes, chunk_sizes, chunk_times)
    events, t = [], 0
    for index, (size, spec) in enumerate(zip(alignment.sizes, alignment.spec_index)):
        ids, pieces = token_ids[t: t + size], texts[t: t + size]
        t += size
        a, d = (accepted[spec], drafted[spec]) if spec is not None else (0, 0)
        last = t == len(token_ids)
        proposal = proposals[index] if proposals else []
        events.append(_event(index, ids, pieces, a, d, step_times[index], last, stop_reason, proposal, text_of))
    return events, alignment


def _event(index, ids, pieces, a, d, seconds, last, stop_reason, proposal=(), text_of=None) -> StepEvent:
    def draft_id(j):
        return ids[j] if j < a and j < len(ids) else (proposal[j] if j < len(proposal) else -1)

    def draft_text(j):
        if j < a and j < len(pieces):
            return pieces[j]
        return text_of(proposal[j]) if j < len(proposal) and text_of is not None else NOT_EXPOSED

    drafts = [DraftToken(position=j, token_id=draft_id(j), text=draft_text(j), q=None, p=None, accept_prob=None,
                         uniform=None, accepted=j < a, evaluated=j <= a)
              for j in range(d)]
    final = None
    if len(ids) == a + 1:
        kind = "target" if d == 0 else ("bonus" if a == d else "resampled")
        final = FinalToken(token_id=ids[a], text=pieces[a], kind=kind, position=a, p=None)
    return StepEvent(index=index, mode="greedy", k=d, drafted=drafts, num_accepted=a, final=final,
                     emitted_ids=list(ids), emitted_text="".join(pieces), draft_time_s=0.0, verify_time_s=0.0,
                     other_time_s=seconds, finished=last,
                     stop_reason=(("eos" if stop_reason == "stop" else "max_new_tokens") if last else None),
                     k_planned=d)


def _step_times(sizes, chunk_sizes, chunk_times) -> list[float]:
    """Each chunk's arrival interval split evenly over the steps inside it."""
    starts, t = [], 0
    for size in sizes:
        starts.append(t)
        t += size
    bounds, total = [], 0
    for size in chunk_sizes:
        total += size
        bounds.append(total)
    intervals = [b - a for a, b in zip([0.0, *chunk_times[:-1]], chunk_times)]
    chunk_of = [next(c for c, end in enumerate(bounds) if s < end) for s in starts]
    per_chunk = {c: chunk_of.count(c) for c in set(chunk_of)}
    return [intervals[c] / per_chunk[c] for c in chunk_of]


def run_result(events: list[StepEvent], prompt_ids: list[int], wall_s: float, settings: DecodeSettings,
               target_name: str, draft_name: Optional[str]) -> RunResult:
    """A RunResult (the record every renderer and export reads) for a vLLM completion. Figures vLLM does
    not report (draft forwards, time inside forwards, memory) are None: not known."""
    metrics = run_record(events, wall_s)
    return RunResult(prompt_ids=list(prompt_ids), token_ids=[t for e in events for t in e.emitted_ids],
                     text=visible_text(events), events=events, metrics=metrics,
                     settings=settings, target_name=target_name, draft_name=draft_name)


def visible_text(events: list[StepEvent]) -> str:
    """The output's text without the end-of-text token that stopped it (as the lab's engine prints it)."""
    text = "".join(e.emitted_text for e in events)
    last = events[-1] if events else None
    if last is None or last.stop_reason != "eos" or not last.emitted_ids:
        return text
    eos = last.final.text if last.final is not None else last.drafted[len(last.emitted_ids) - 1].text
    return text[: len(text) - len(eos)] if text.endswith(eos) else text
