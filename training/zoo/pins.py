"""``python -m training.zoo.pins``: print the pinned greedy (accepted, drafted) of each shipped drafter
for tests/drafters/test_zoo_shipped.py (float32 target, its PROMPT and SETTINGS); run from the repository root."""
from __future__ import annotations


def main() -> None:
    from specdec.drafters.registry import load_drafter
    from specdec.drafters.shipped import available
    from specdec.planning.run import generate
    from specdec.models.loading import load_model

    from tests.drafters import test_zoo_shipped as t
    from training.zoo.data import chat_ids

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
