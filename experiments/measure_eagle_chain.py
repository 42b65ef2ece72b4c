"""Greedy tokens per target forward of EAGLE heads' chain (and tree) drafts, by K and prompt kind, on held-out prompts.

    python experiments/measure_eagle_chain.py [--per-kind 4] [--kinds chat,code,rewrite] [--ks 1,2,3,4]
                                          [--trees "(3,3,8)"] [--split heldout|trained] [--profile bf16]
                                          [--vocabularies context,draft] [FOLDER ...]

Each FOLDER holds a head (model.safetensors + zoo.json, as `python -m training zoo --out` writes them, or a
training checkpoint; an EAGLE-3 head's zoo.json names the target layers it reads; default: the shipped
smollm2-135m-eagle). The float32 target decodes each held-out prompt (chat template, 64 new tokens) through the
engine with the head drafting K tokens a step (a chain, or with --trees an EAGLE-2 tree of each (top, beam,
nodes) shape, K levels deep); printed per folder, draft and K: tokens per target forward pooled over each kind's
prompts (bonus/correction token included); with --positions, for chains, also each position's acceptance given the
positions before it were accepted (over the steps that drafted all K: where the chain's tokens are lost). Greedy decoding is
deterministic, so two heads compare exactly, without timing noise; how that turns into wall-clock speed is the
Sweep's measurement (experiments/measure_sweep.py). `--split trained` measures on instructions a profile's heads
trained on instead (--profile's greedy batches, evenly spaced through its data; bf16: the shipped heads'): the gap
between the two splits is how much of a head's acceptance is memory of its data rather than generalisation.
`--split asked` measures on instructions the target writes itself (training/zoo/asked.py) with seed 1, kind "asked":
profile eagle3-asked trained on seed 0's, and any of those (read from its work folder when present) are left out.
`--vocabularies context,draft` measures each head twice: drafting from its draft vocabulary plus the text's ids (as the
zoo's heads do, drafters.HeadRows; "context") and from its draft vocabulary alone ("draft", as they did before).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from specdec import DecodeSettings, generate
from specdec.drafters.eagle import build_eagle
from specdec.drafters.shipped import drafter_dir
from specdec.engine.tree import TreeShape
from specdec.models.loading import load_model

from training.zoo.asked import write_instructions
from training.zoo.data import chat_ids, trained_greedy_prompts
from training.zoo.pipeline import PROFILES, chat_topics, default_work
from training.zoo.prompts import build_prompts, heldout_prompts


def trained_prompts(target, per_kind: int, profile_name: str) -> dict[str, list[str]]:
    """``per_kind`` instructions of each kind that a profile's data answered greedily, evenly spaced through it."""
    profile = PROFILES[profile_name]
    topics = chat_topics(target.model, target.tokenizer, default_work(profile_name), profile.topic_source)
    trained = trained_greedy_prompts(target.tokenizer, build_prompts("train", profile.prompts, mix=profile.prompt_mix,
                                                                     chat_topics=topics),
                                     batch_size=profile.gen_batch, max_batches=profile.gen_batches)
    return {kind: texts[::max(1, len(texts) // per_kind)][:per_kind] for kind, texts in trained.items()}


def asked_held_out(target, count: int) -> dict[str, list[str]]:
    """``count`` instructions the target writes with seed 1 that eagle3-asked's data (seed 0) does not hold."""
    trained_file = default_work("eagle3-asked") / "asked.json"
    trained = set(json.loads(trained_file.read_text())["instructions"]) if trained_file.exists() else set()
    texts = write_instructions(target.model, target.tokenizer, count + 16, seed=1, log=lambda s: None)
    return {"asked": [t for t in texts if t not in trained][:count]}


def conditional_acceptance(accepted: list[int], k: int) -> list[str]:
    """Position i's acceptance among the steps whose positions 1..i-1 were all accepted (and how many those were)."""
    out = []
    for i in range(1, k + 1):
        reached = sum(1 for n in accepted if n >= i - 1)
        out.append(f"{sum(1 for n in accepted if n >= i) / reached:.3f}/{reached}" if reached else "-")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="*", default=[str(drafter_dir("smollm2-135m-eagle"))])
    parser.add_argument("--per-kind", type=int, default=4)
    parser.add_argument("--ks", default="1,2,3,4")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--kinds", default="chat,code,rewrite")
    parser.add_argument("--trees", default="", help='(top, beam, nodes) triples, e.g. "(3,3,8)": tree drafts too')
    parser.add_argument("--split", choices=("heldout", "trained", "asked"), default="heldout")
    parser.add_argument("--profile", default="bf16", choices=sorted(PROFILES), help="whose data --split trained reads")
    parser.add_argument("--positions", action="store_true",
                        help="chains: each position's acceptance given the ones before it, per kind")
    parser.add_argument("--vocabularies", default="context",
                        help="comma-separated, each head measured with each: context (the draft vocabulary plus the "
                             "text's ids, as the zoo drafts; the default), draft (the draft vocabulary alone)")
    args = parser.parse_args()
    if not set(args.vocabularies.split(",")) <= {"context", "draft"}:
        parser.error(f"--vocabularies takes context and/or draft, got {args.vocabularies!r}")
    target = load_model("smollm2-135m-instruct", dtype="float32")
    kinds = args.kinds.split(",")
    if args.split == "heldout":
        texts_by_kind = heldout_prompts(args.per_kind)
    elif args.split == "asked":
        texts_by_kind, kinds = asked_held_out(target, args.per_kind), ["asked"]
    else:
        texts_by_kind = trained_prompts(target, args.per_kind, args.profile)
    prompts = {kind: [chat_ids(target.tokenizer, text) for text in texts]
               for kind, texts in texts_by_kind.items() if kind in kinds}
    shapes = [None] + [TreeShape(*shape) for shape in eval(f"[{args.trees}]")]  # noqa: S307 (int triples)
    for folder in args.folders:
        drafter = build_eagle(target, "eagle", "", Path(folder))
        for shape, vocabulary in ((s, v) for s in shapes for v in args.vocabularies.split(",")):
            drafter.tree_shape, drafter.head_rows.follows_context = shape, vocabulary == "context"
            draft = "chain" if shape is None else f"tree ({shape.top},{shape.beam},{shape.nodes})"
            draft += "" if vocabulary == "context" else ", draft vocabulary only"
            for k in (int(k) for k in args.ks.split(",")):
                shares, by_position = [], []
                for kind, prompt_ids in prompts.items():
                    tokens = forwards = 0
                    accepted = []  # per full step of a chain: how many of its K drafts were accepted
                    for ids in prompt_ids:
                        settings = DecodeSettings(max_new_tokens=args.new_tokens, k=k)
                        result = generate(target, drafter, ids, settings)
                        tokens, forwards = tokens + result.metrics.new_tokens, forwards + result.metrics.target_forwards
                        accepted += [e.num_accepted for e in result.events if e.k == k and not e.tree]
                    shares.append(f"{kind} {tokens / forwards:.3f}")
                    if args.positions and shape is None:
                        by_position.append(f"{kind} " + " ".join(conditional_acceptance(accepted, k)))
                print(f"{folder} {draft} K={k}: " + ", ".join(shares), flush=True)
                if by_position:
                    print(f"    acceptance at positions 1..{k} given the earlier ones: " + "; ".join(by_position),
                          flush=True)


if __name__ == "__main__":
    main()
