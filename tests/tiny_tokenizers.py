"""Tiny word-level tokenizers that AutoTokenizer can load from a folder."""
from __future__ import annotations

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def word_tokenizer(words: list[str]) -> PreTrainedTokenizerFast:
    vocab = {"<unk>": 0, "<eos>": 1}
    for word in words:
        vocab.setdefault(word, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>")


WORDS = "the cat sat on a mat and then it ran to red blue green house tree def return if else for in".split()
