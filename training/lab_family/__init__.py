"""Training pipeline for the bundled SpecDec Lab model family.

Entry point: ``python -m training build --profile full`` (see ``__main__``).
Stages: corpus (Python stdlib source + bundled docs prose) -> byte-level BPE tokenizer ->
target -> corpus-only drafts -> draft distilled from the target -> Hugging Face folders.
``python -m training cards`` then writes each folder's README.md from the shipped weights.
"""
