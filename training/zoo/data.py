"""Training data for the draft zoo: the target's own answers (self-distillation) and its features.

``generate_with_features``: the target (in the profile's dtype) answers the instructions of prompts.py in
batches (even batches greedy, odd ones sampled at T = 0.7, up to ``max_new_tokens``) and, as it generates, keeps what
each drafter trains on: the final-norm hidden state (EAGLE / Medusa input), the hidden state after layer
L (early-exit input), the target's top-k next-token logits (distillation labels) and, when asked
(``feature_layers``), the hidden states after a few chosen layers, concatenated (EAGLE-3's input). One shard per batch,
so an interrupted run resumes where it stopped; ``load_shards`` reads them back.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch


def chat_ids(tokenizer, instruction: str) -> list[int]:
    """The instruction in the target's chat template, ready for the assistant's answer."""
    ids = tokenizer.apply_chat_template([{"role": "user", "content": instruction}], add_generation_prompt=True,
                                        tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return list(ids)


def system_prefix_length(tokenizer) -> int:
    """Tokens every chat prompt shares (the template's default system turn): not trained on."""
    a, b = chat_ids(tokenizer, "a"), chat_ids(tokenizer, "b")
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def plan_batches(tokenizer, prompts: list[tuple[str, str]], batch_size: int, max_prompt_tokens: int,
                 seed: int) -> tuple[list[list[tuple[int, str, list[int]]]], list[int]]:
    """The data's batches and the seeded order they are generated in: prompts of at most ``max_prompt_tokens``
    (in the chat template) sorted by length, cut into batches of ``batch_size`` items (index, kind, ids).
    Which batches are sampled: ``is_sampled_batch``."""
    items = []
    for index, (kind, text) in enumerate(prompts):
        ids = chat_ids(tokenizer, text)
        if len(ids) <= max_prompt_tokens:
            items.append((index, kind, ids))
    items.sort(key=lambda it: len(it[2]))
    batches = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]
    order = torch.randperm(len(batches), generator=torch.Generator().manual_seed(seed)).tolist()
    return batches, order


def is_sampled_batch(b: int) -> bool:
    """Batch number b of a plan is answered at T = 0.7 when odd, greedily when even."""
    return b % 2 == 1


def trained_greedy_prompts(tokenizer, prompts: list[tuple[str, str]], *, batch_size: int, max_batches: int | None,
                           seed: int = 0, max_prompt_tokens: int = 320) -> dict[str, list[str]]:
    """Per kind, the instructions of a profile's data that the target answered greedily (its even batches among
    the first ``max_batches`` of the order): prompts a head trained on, with the very answers a float32 greedy run
    starts from (the data's dtype may diverge later). In generation order."""
    batches, order = plan_batches(tokenizer, prompts, batch_size, max_prompt_tokens, seed)
    out: dict[str, list[str]] = {}
    for b in order[:max_batches or len(order)]:
        if not is_sampled_batch(b):
            for index, kind, _ in batches[b]:
                out.setdefault(kind, []).append(prompts[index][1])
    return out


@torch.no_grad()
def generate_with_features(model, tokenizer, prompts: list[tuple[str, str]], out_dir: Path, *, exit_layer: int,
                           batch_size: int = 16, max_new_tokens: int = 160, seed: int = 0,
                           max_prompt_tokens: int = 320, top_k: int = 20, time_budget_s: float | None = None,
                           max_batches: int | None = None, feature_layers: tuple[int, ...] = (), log=print) -> dict:
    """Self-distillation data in one pass: the target answers each prompt (a batch at a time; even
    batches greedy, odd ones sampled at T = 0.7) and every position's teacher signals are kept as they
    are computed (final-norm feature, hidden state after ``exit_layer`` layers, top-k next-token logits, and
    the states after each of ``feature_layers``, concatenated, as "layers"), so no separate teacher pass is
    needed. One shard per batch in out_dir; existing shards are kept
    (an interrupted run resumes)."""
    from specdec.runners.cache_compat import cache_argument_name

    from transformers import DynamicCache

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    batches, order = plan_batches(tokenizer, prompts, batch_size, max_prompt_tokens, seed)
    (out_dir / "order.json").write_text(json.dumps({"order": order, "batch_size": batch_size, "seed": seed}))
    cache_arg = cache_argument_name(model)
    head = model.get_output_embeddings()
    model.eval()
    start, tokens, answer_tokens = time.time(), 0, 0
    for bi, b in enumerate(order):
        if max_batches is not None and bi >= max_batches:
            break  # the first max_batches batches of the seeded order: a fixed, reproducible data set
        shard = out_dir / f"shard_{b:05d}.pt"
        if shard.exists():
            continue
        batch = batches[b]
        sampled = is_sampled_batch(b)
        gen = torch.Generator().manual_seed(seed * 100003 + b)
        width = max(len(it[2]) for it in batch)
        n = len(batch)
        ids = torch.zeros((n, width), dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for r, (_, _, p) in enumerate(batch):
            ids[r, width - len(p):] = torch.tensor(p)
            mask[r, width - len(p):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        finals, earlies, tls, tis, fused = [], [], [], [], []
        inputs = ids
        answers = [[] for _ in range(n)]
        alive = torch.ones(n, dtype=torch.bool)
        for step in range(max_new_tokens + 1):
            out = model.model(input_ids=inputs, attention_mask=mask, position_ids=positions,
                              output_hidden_states=True, use_cache=True, **{cache_arg: cache})
            final = out.last_hidden_state
            logits = head(final[:, -1]).float()
            tl, ti = logits.topk(top_k, dim=-1)
            finals.append(final), earlies.append(out.hidden_states[exit_layer])
            if feature_layers:
                fused.append(torch.cat([out.hidden_states[layer] for layer in feature_layers], dim=-1))
            if step == 0:
                full_tl, full_ti = head(final).float().topk(top_k, dim=-1)
                tls.append(full_tl), tis.append(full_ti)
            else:
                tls.append(tl[:, None]), tis.append(ti[:, None])
            if step == max_new_tokens or not alive.any():
                break
            if sampled:
                nxt = torch.multinomial(torch.softmax(logits / 0.7, dim=-1), 1, generator=gen)[:, 0]
            else:
                nxt = logits.argmax(-1)
            for r in range(n):
                if alive[r]:
                    answers[r].append(int(nxt[r]))
                    if int(nxt[r]) == eos:
                        alive[r] = False
            if not alive.any():
                break
            inputs = nxt[:, None]
            mask = torch.cat([mask, torch.ones((n, 1), dtype=torch.long)], dim=1)
            positions = positions[:, -1:] + 1
        final = torch.cat(finals, dim=1)
        early = torch.cat(earlies, dim=1)
        tl = torch.cat(tls, dim=1)
        ti = torch.cat(tis, dim=1)
        layers = torch.cat(fused, dim=1) if feature_layers else None
        records = []
        for r, (index, kind, p) in enumerate(batch):
            seq = p + answers[r]
            cols = slice(width - len(p), width - len(p) + len(seq) - 1)  # positions 0 .. len(seq) - 2
            records.append({"index": index, "kind": kind, "mode": "T0.7" if sampled else "greedy", "ids": seq,
                            "prompt_len": len(p),
                            "features": final[r, cols].to(torch.bfloat16).clone(),
                            "early": early[r, cols].to(torch.bfloat16).clone(),
                            "top_logits": tl[r, cols].half().clone(), "top_ids": ti[r, cols].int().clone()})
            if layers is not None:
                records[-1].update(layers=layers[r, cols].to(torch.bfloat16).clone(), feature_layers=list(feature_layers))
            tokens += len(seq)
            answer_tokens += len(answers[r])
        torch.save(records, shard)
        elapsed = time.time() - start
        log(f"batch {bi + 1}/{len(batches)} ({'T=0.7' if sampled else 'greedy'}): {answer_tokens} answer tokens, "
            f"{tokens} tokens in {elapsed:.0f} s ({answer_tokens / max(elapsed, 1e-9):.0f} answer tok/s)")
        if time_budget_s is not None and elapsed > time_budget_s:
            log("time budget reached; stopping generation")
            break
    return {"tokens": tokens, "answer_tokens": answer_tokens, "seconds": time.time() - start,
            "batch_size": batch_size, "batches": sum(1 for b in order[: max_batches or len(order)]
                                                     if (out_dir / f"shard_{b:05d}.pt").exists())}


def load_shards(out_dir: Path, batches: list[int] | None = None) -> list[dict]:
    """Records of the given batch numbers (default: every shard present)."""
    records = []
    shards = sorted(Path(out_dir).glob("shard_*.pt"))
    if batches is not None:
        wanted = set(batches)
        shards = [s for s in shards if int(s.stem.split("_")[1]) in wanted]
    for shard in shards:
        records.extend(torch.load(shard, weights_only=False))
    records.sort(key=lambda r: r["index"])
    return records
