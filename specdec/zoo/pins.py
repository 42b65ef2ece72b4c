"""``python -m specdec.zoo.pins``: print the pinned greedy (accepted, drafted) of each shipped drafter
for tests/test_zoo_shipped.py (float32 target, its PROMPT and SETTINGS)."""
from __future__ import annotations


def main() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    import test_zoo_shipped as t

    from ..decoding import generate
    from ..drafters.registry import load_drafter
    from ..loading import load_model
    from . import available
    from .data import chat_ids

    target = load_model("smollm2-135m-instruct", dtype="float32")
    ids = chat_ids(target.tokenizer, t.PROMPT)
    alone = generate(target, None, ids, t.SETTINGS).token_ids
    for name in t.NAMES:
        if not available(name):
            continue
        r = generate(target, load_drafter(name, target), ids, t.SETTINGS)
        print(f'    "{name}": ({r.metrics.accepted_tokens}, {r.metrics.drafted_tokens}),'
              f'  # identical: {r.token_ids == alone}')


if __name__ == "__main__":
    main()
