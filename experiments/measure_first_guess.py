"""Where an EAGLE head's first guess is lost: its agreement with the target at every answer position, by split and by
how confident the target is there.

    python experiments/measure_first_guess.py [--per-split 24] [--new-tokens 64] [--profile eagle3-asked]
                                          [--draft-vocabulary-only] [--by-choice] [FOLDER ...]

measure_eagle_chain.py --positions showed that the chains' first draft is what bounds held-out chat. Here each chat
instruction is answered greedily by the float32 target (64 new tokens) and the head's first guess is compared with the
target's choice at every answer position (training/zoo/first_guess.py), with the target's own top-1 probability there.
Chat instructions come from five splits that separate what a held-out prompt changes:

    heldout          held-out templates x held-out topics (measure_eagle_chain's held-out chat prompts, first 12)
    seen-templates   training templates x held-out topics
    seen-topics      held-out templates x training topics
    unseen-pairs     training templates x training topics, pairs no training plan holds
    trained          instructions the --profile's data answered greedily (the head has seen these very answers)

Printed per folder and split: the agreement over all answer positions, the target's mean top-1 probability, how
often the target's choice is one the head cannot draft there (outside its draft vocabulary and the text before it, as
the drafters' vocabulary follows the text; --draft-vocabulary-only: outside the draft vocabulary, as the heads
drafted before they followed the text), and the agreement within bins of
that probability (with each bin's share of positions). If the agreement within each bin is the same across splits,
the splits differ only in how confident the target is, i.e. in how predictable its answers are; if it differs within
bins, the head generalises worse to what it did not see. --by-choice also splits the positions where the target is
sure (p >= 0.9) by what it chose (first_guess.choice_kinds: a piece inside a word or not, and whether the text held
it before). Greedy, no timing: exact and repeatable on any machine.
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

from specdec.drafters.eagle import load_eagle_head
from specdec.drafters.shipped import drafter_dir
from specdec.models.loading import load_model

import torch

from training.zoo import prompts as P
from training.zoo.data import chat_ids, trained_greedy_prompts
from training.zoo.first_guess import agreement, choice_kinds, target_pass
from training.zoo.pipeline import PROFILES, chat_topics, default_work

BINS = (0.0, 0.3, 0.6, 0.9, 1.01)  # the target's top-1 probability at the position


def crossed(templates: list[str], topics: list[str], count: int, exclude: set[str], seed: str) -> list[str]:
    """``count`` distinct instructions, each a template (one-topic templates only) filled with a topic."""
    rng = random.Random(seed)
    pool = [t.format(t=topic) for t in templates if "{u}" not in t for topic in topics]
    pool = [text for text in dict.fromkeys(pool) if text not in exclude]
    rng.shuffle(pool)
    return pool[:count]


def splits(target, per_split: int, profile_name: str) -> dict[str, list[str]]:
    profile, tokenizer = PROFILES[profile_name], target.tokenizer
    topics = chat_topics(target.model, tokenizer, default_work(profile_name), profile.topic_source)
    planned = P.build_prompts("train", profile.prompts, mix=profile.prompt_mix, chat_topics=topics)
    trained = trained_greedy_prompts(tokenizer, planned, batch_size=profile.gen_batch,
                                     max_batches=profile.gen_batches)["chat"]
    seen_templates = P.CHAT_TEMPLATES + P.MORE_CHAT_TEMPLATES
    seen_topics, held_topics = P._split(P.CHAT_TOPICS), P._split(P.HELDOUT_CHAT_TOPICS)
    every_planned = {text for _, text in planned}
    return {
        "heldout": P.heldout_prompts(per_split)["chat"],
        "seen-templates": crossed(seen_templates, held_topics, per_split, set(), "seen-templates"),
        "seen-topics": crossed(P.HELDOUT_CHAT_TEMPLATES, seen_topics, per_split, set(), "seen-topics"),
        "unseen-pairs": crossed(seen_templates, seen_topics, per_split, every_planned, "unseen-pairs"),
        "trained": trained[:: max(1, len(trained) // per_split)][:per_split],
    }


def summary(agree: torch.Tensor, conf: torch.Tensor, draftable: torch.Tensor) -> str:
    parts = [f"agreement {agree.float().mean():.3f} over {len(agree)}", f"target top-1 p {conf.mean():.3f}",
             f"target's choice not draftable {1 - draftable.float().mean():.1%}"
             f" (at p >= 0.9: {1 - draftable[conf >= 0.9].float().mean():.1%})"]
    for lo, hi in zip(BINS, BINS[1:]):
        inside = (conf >= lo) & (conf < hi)
        share = inside.float().mean()
        rate = agree[inside].float().mean() if inside.any() else float("nan")
        parts.append(f"p in [{lo:.1f},{min(hi, 1):.1f}): {rate:.3f} ({share:.0%})")
    return "; ".join(parts)


def by_choice(agree: torch.Tensor, conf: torch.Tensor, kinds: list[str]) -> str:
    """At p >= 0.9: each kind of choice's share of those positions, the agreement there, and its share of misses."""
    sure = (conf >= 0.9).tolist()
    rows = {}
    for kind, agreed, is_sure in zip(kinds, agree.tolist(), sure):
        if is_sure:
            rows.setdefault(kind, []).append(agreed)
    total = sum(len(v) for v in rows.values())
    return "; ".join(f"{kind} {len(v) / total:.1%} agree {sum(v) / len(v):.3f} missed {(len(v) - sum(v)) / total:.1%}"
                     for kind, v in sorted(rows.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="*", default=[str(drafter_dir("smollm2-135m-eagle3"))])
    parser.add_argument("--per-split", type=int, default=24)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--profile", default="eagle3-asked", choices=sorted(PROFILES),
                        help="whose data the 'trained' and 'unseen-pairs' splits are taken from / kept out of")
    parser.add_argument("--draft-vocabulary-only", action="store_true",
                        help="the head drafts from its draft vocabulary alone, not the text's ids too")
    parser.add_argument("--by-choice", action="store_true",
                        help="also split the confident positions by what the target chose (first_guess.choice_kinds)")
    args = parser.parse_args()
    target = load_model("smollm2-135m-instruct", dtype="float32")
    heads = [(folder, *load_eagle_head(target.model.config, Path(folder))) for folder in args.folders]
    layers = {head.feature_layers for _, head, _ in heads}
    if len(layers) != 1 or not next(iter(layers)):
        raise SystemExit("give EAGLE-3 heads that read the same target layers")
    layers = next(iter(layers))
    for split, texts in splits(target, args.per_split, args.profile).items():
        passes = [target_pass(target.model, chat_ids(target.tokenizer, text), args.new_tokens, layers) for text in texts]
        for folder, head, vocab in heads:
            agree, conf, drafts = (torch.cat(c) for c in zip(*(agreement(target.model, head, vocab, seen,
                                                                          not args.draft_vocabulary_only)
                                                                for seen in passes)))
            print(f"{split:15s} {Path(folder).name}: {summary(agree, conf, drafts)}", flush=True)
            if args.by_choice:
                kinds = [kind for seen in passes for kind in choice_kinds(target.tokenizer, seen)]
                print(f"{'':15s} at p >= 0.9, by choice: {by_choice(agree, conf, kinds)}", flush=True)


if __name__ == "__main__":
    main()
