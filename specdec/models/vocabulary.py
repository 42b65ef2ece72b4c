"""Whether a draft's token ids mean the same as its target's (checked once per pair)."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from specdec.errors import IncompatibleModelsError

if TYPE_CHECKING:
    from specdec.models.loading import LoadedModel

_compatible: "weakref.WeakKeyDictionary[LoadedModel, weakref.WeakSet]" = weakref.WeakKeyDictionary()


def check_compatible(target: LoadedModel, draft: LoadedModel) -> None:
    """Raise IncompatibleModelsError unless the draft's token ids mean the same as the target's.
    A pair found compatible once is remembered (vocabularies of 150k tokens take a while)."""
    if draft in _compatible.get(target, ()):
        return
    _check_vocabularies(target, draft)
    _compatible.setdefault(target, weakref.WeakSet()).add(draft)


def _check_vocabularies(target: LoadedModel, draft: LoadedModel) -> None:
    if (target.tokenizer is None) != (draft.tokenizer is None):
        missing = target.name if target.tokenizer is None else draft.name
        raise IncompatibleModelsError(f"{target.name} and {draft.name} cannot be compared: {missing} has no tokenizer")
    if target.tokenizer is None:  # weights-only folders: ids must at least cover the same range
        if target.embedding_rows != draft.embedding_rows:
            raise IncompatibleModelsError(
                f"{target.name} ({target.embedding_rows} token ids) and {draft.name} "
                f"({draft.embedding_rows} token ids) have different vocabularies"
            )
        return
    target_vocab, draft_vocab = target.tokenizer.get_vocab(), draft.tokenizer.get_vocab()
    if target_vocab == draft_vocab:
        return
    raise IncompatibleModelsError(describe_vocab_mismatch(target.name, target_vocab, draft.name, draft_vocab))


def describe_vocab_mismatch(target_name: str, target_vocab: dict, draft_name: str, draft_vocab: dict) -> str:
    only_target = target_vocab.keys() - draft_vocab.keys()
    only_draft = draft_vocab.keys() - target_vocab.keys()
    moved = [t for t in target_vocab.keys() & draft_vocab.keys() if target_vocab[t] != draft_vocab[t]]
    parts = [f"{len(target_vocab)} vs {len(draft_vocab)} tokens"]
    if only_target or only_draft:
        parts.append(f"{len(only_target)} only in {target_name}, {len(only_draft)} only in {draft_name}")
    if moved:
        token = sorted(moved)[0]
        parts.append(
            f"{len(moved)} shared tokens have different ids (e.g. {token!r} is {target_vocab[token]} in "
            f"{target_name} but {draft_vocab[token]} in {draft_name})"
        )
    return (
        f"{draft_name} cannot draft for {target_name}: their tokenizers differ ({'; '.join(parts)}). "
        "Speculative decoding needs a draft that shares the target's vocabulary."
    )


def shared_vocab_size(target: LoadedModel, draft: LoadedModel | None) -> int:
    if draft is None:
        return target.real_vocab_size
    return min(target.real_vocab_size, draft.real_vocab_size)
