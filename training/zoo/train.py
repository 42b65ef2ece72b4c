"""Training the four zoo drafters on self-distillation data (data.py) against the frozen target.

Every drafter learns the target's next-token distribution (its top-k logits, kept while the target
generated the data), through the target's own head rows of a reduced draft vocabulary:

  draft        2 own decoder layers (initialised from target layers 0 and N-1) on the target's
               embedding, final norm and head: predicts token p + 1 from tokens 0..p
  early exit   1 adapter decoder layer (initialised from target layer L) on the hidden state after
               the target's first L layers, then the target's final norm and head
  medusa       n residual blocks on the final-norm feature of position p; head k predicts the token
               k + 2 places on (the target's own head predicts the first)
  eagle        fc([feature p; embedding of token p + 1]) -> decoder layer(s) -> predicted feature
               p + 1 -> head: token p + 2; trained with EAGLE-3's training-time test (the head reads its
               own predicted features for `ttt_depth` more steps) plus a small feature-regression loss
  eagle-3      the same head whose true feature p is fused from several of the target's layers at p
               (feature_layers), trained on tokens only (reg_weight 0), as EAGLE-3
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

from specdec.drafters.heads import EagleHead, MedusaHeads, layer_forward, rope_tables

import torch
import torch.nn.functional as F


@dataclass
class TrainConfig:
    epochs: float = 1.0
    lr: float = 3e-4
    batch_tokens: int = 4096
    weight_decay: float = 0.0
    warmup_steps: int = 20
    seed: int = 0
    time_budget_s: float | None = None  # stop early (recorded) when exceeded
    max_steps: int | None = None  # when set, exactly this many steps (instead of epochs)
    ttt_depth: int = 2  # eagle: extra unrolled steps
    eagle_layers: int = 1  # eagle: decoder layers in the head
    negatives: int | None = 1024  # sampled-softmax negatives per batch (None: the whole draft vocabulary)
    reg_weight: float = 0.1  # eagle: smooth-L1 feature regression weight
    medusa_heads: int = 4
    position_fraction: float = 1.0  # medusa: share of positions each head is trained on per batch (cost)
    autocast: bool = False  # forward passes under bfloat16 autocast (float32 master weights and losses)
    feature_layers: tuple[int, ...] = ()  # eagle: fuse these layers' outputs (EAGLE-3); (): the final-norm feature
    eagle_intermediate: int | None = None  # eagle: the head layer's MLP width (None: the target's)
    eagle_input: str = "fc"  # eagle: EagleHead's input_layout ("concat": EAGLE-3's reference layer, vLLM's)
    checkpoints: tuple[float, ...] = ()  # fractions of the planned steps at which a copy is saved (the curve)
    init_from: str | None = None  # eagle: a trained head's folder to start from (relative: in the work folder)
    context_rows: bool = False  # eagle: train as the heads draft: over the draft vocabulary plus each sequence's own
    #                             ids so far (drafters._HeadRows), those among the candidates (Batches(context_rows))


def draft_vocabulary(records: list[dict], size: int, skip: int, eos_id: int, vocab_size: int = 0) -> torch.Tensor:
    """The `size` ids the target most often ranks first in the data, then the lowest ids; sorted; EOS included."""
    counts = torch.zeros(max(vocab_size, int(max(int(r["top_ids"].max()) for r in records)) + 2), dtype=torch.long)
    for r in records:
        top1 = r["top_ids"][skip:, 0].long()
        counts.index_add_(0, top1, torch.ones_like(top1))
    counts[eos_id] += 10**9
    # ties (most of the vocabulary is never a first choice in the data) go to the lowest ids: BPE
    # vocabularies list their most common merges first, so they fill the rest of the draft vocabulary
    vocab_size = max(len(counts), size)
    counts = torch.cat([counts, counts.new_zeros(vocab_size - len(counts))]).double()
    score = counts * vocab_size + (vocab_size - torch.arange(vocab_size, dtype=torch.float64))
    return score.topk(size).indices.sort().values


def vocab_coverage(records: list[dict], vocab: torch.Tensor, skip: int) -> float:
    member = torch.zeros(int(vocab.max()) + 1 + 60000, dtype=torch.bool)
    member[vocab] = True
    hit = total = 0
    for r in records:
        top1 = r["top_ids"][skip:, 0].long()
        hit += int(member[top1].sum())
        total += len(top1)
    return hit / max(total, 1)


class Batches:
    """Padded batches of records (sorted by length, shuffled per epoch), teacher targets mapped to the
    draft vocabulary: probs [B, T, k] (softmax of the top-k logits; ids outside the vocabulary get 0).

    context_rows: the vocabulary is the draft vocabulary (columns 0 .. base_size - 1) followed by every other id the
    records' texts hold, and each batch says where each of those first appears in each sequence (first_pos
    [B, vocab_size]): a row may use such a column only from there on, as the heads draft (drafters._HeadRows)."""

    def __init__(self, records: list[dict], vocab: torch.Tensor, skip: int, batch_tokens: int, max_len: int = 480,
                 top_k: int = 8, context_rows: bool = False):
        self.records = [r for r in records if len(r["ids"]) > skip + 2]
        self.top_k = top_k
        self.base_size, self.context_rows = len(vocab), context_rows
        size = int(max(int(vocab.max()), max(int(r["top_ids"].max()) for r in self.records))) + 1
        if context_rows:
            size = max(size, max(max(r["ids"]) for r in self.records) + 1)
            in_text = torch.zeros(size, dtype=torch.bool)
            for r in self.records:
                in_text[torch.as_tensor(r["ids"], dtype=torch.long)] = True
            in_text[vocab] = False
            vocab = torch.cat([vocab.long(), in_text.nonzero()[:, 0]])
        self.vocab = vocab  # [vocab_size] target ids: column j is token vocab[j]
        self.vocab_size = len(vocab)
        self.skip, self.batch_tokens, self.max_len = skip, batch_tokens, max_len
        lookup = torch.full((size,), -1, dtype=torch.long)
        lookup[vocab] = torch.arange(len(vocab))
        self.lookup = lookup
        order = sorted(range(len(self.records)), key=lambda i: len(self.records[i]["ids"]))
        self.groups, group, width = [], [], 0
        for i in order:
            n = min(len(self.records[i]["ids"]), max_len)
            if group and max(width, n) * (len(group) + 1) > batch_tokens:
                self.groups.append(group)
                group, width = [], 0
            group.append(i)
            width = max(width, n)
        if group:
            self.groups.append(group)

    def tokens(self) -> int:
        return sum(min(len(r["ids"]), self.max_len) for r in self.records)

    def epoch(self, generator: torch.Generator):
        for g in torch.randperm(len(self.groups), generator=generator).tolist():
            yield self.collate([self.records[i] for i in self.groups[g]])

    def collate(self, recs: list[dict]) -> dict:
        n_pos = max(min(len(r["ids"]), self.max_len) - 1 for r in recs)  # feature positions
        b = len(recs)
        d = recs[0]["features"].shape[-1]
        k = min(self.top_k, recs[0]["top_ids"].shape[-1])
        ids = torch.zeros(b, n_pos + 1, dtype=torch.long)
        feats = torch.zeros(b, n_pos, d)
        early = torch.zeros(b, n_pos, d)
        wide = recs[0]["layers"].shape[-1] if "layers" in recs[0] else 0
        layers = torch.zeros(b, n_pos, wide)
        tidx = torch.zeros(b, n_pos, k, dtype=torch.long)
        tprob = torch.zeros(b, n_pos, k)
        valid = torch.zeros(b, n_pos, dtype=torch.bool)  # position p has a teacher target (token p + 1)
        for r, rec in enumerate(recs):
            m = min(len(rec["ids"]), self.max_len) - 1
            ids[r, : m + 1] = torch.tensor(rec["ids"][: m + 1])
            feats[r, :m] = rec["features"][:m].float()
            early[r, :m] = rec["early"][:m].float()
            if wide:
                layers[r, :m] = rec["layers"][:m].float()
            probs = torch.softmax(rec["top_logits"][:m, :k].float(), dim=-1)
            mapped = self.lookup[rec["top_ids"][:m, :k].long()]
            tprob[r, :m] = probs * (mapped >= 0)
            tidx[r, :m] = mapped.clamp(min=0)
            valid[r, self.skip : m] = True
        tprob = tprob / tprob.sum(-1, keepdim=True).clamp(min=1e-6)
        batch = {"ids": ids, "features": feats, "early": early, "layers": layers, "tidx": tidx, "tprob": tprob,
                 "valid": valid, "top1": tidx[..., 0]}
        if self.context_rows:  # [B, vocab_size]; lookup -1: padding (id 0 may be in no vocabulary), marks nothing
            batch["first_pos"] = first_positions(self.lookup[ids], self.vocab_size)
        return batch


def first_positions(columns: torch.Tensor, size: int) -> torch.Tensor:
    """[B, size]: where each column first appears in each row of columns [B, T] (-1: padding, which marks
    nothing); T where it does not appear."""
    width = columns.shape[1]
    positions = torch.where(columns >= 0, torch.arange(width), width)
    return torch.full((len(columns), size), width, dtype=torch.long).scatter_reduce(
        1, columns.clamp(min=0), positions, reduce="amin")


def usable_by_row(first_pos: torch.Tensor, in_draft_vocab: torch.Tensor, rows: int) -> torch.Tensor:
    """[B, rows, C] bool: row p (the guess at token p + 2) may use a column of the draft vocabulary always, another
    once tokens 0 .. p + 1 of its text hold it, as the heads draft (drafters._HeadRows). first_pos [B, C] (as
    first_positions gives), in_draft_vocab [C] bool."""
    return in_draft_vocab[None, None, :] | (first_pos[:, None, :] <= torch.arange(rows)[None, :, None] + 1)


def candidates(batch: dict, vocab_size: int, extra: int, generator: torch.Generator) -> torch.Tensor:
    """Sampled softmax: the draft-vocabulary ids any teacher target of the batch names, plus `extra`
    random ids (negatives) of the first vocab_size columns, plus (context rows) every column the batch's texts
    hold, sorted. Losses are computed over these columns only (cost)."""
    used = batch["tidx"][batch["tprob"] > 0].unique()
    rand = torch.randint(0, vocab_size, (extra,), generator=generator)
    if "first_pos" not in batch:
        return torch.cat([used, rand]).unique()
    in_text = (batch["first_pos"] < batch["ids"].shape[1]).any(0).nonzero()[:, 0]
    return torch.cat([used, rand, in_text]).unique()


def restrict(batch: dict, cand: torch.Tensor, vocab_size: int) -> dict:
    """The batch's teacher indices re-expressed as columns of `cand` (context rows: first_pos too)."""
    remap = torch.zeros(vocab_size, dtype=torch.long)
    remap[cand] = torch.arange(len(cand))
    out = dict(batch)
    out["tidx"] = remap[batch["tidx"]]
    if "first_pos" in batch:
        out["first_pos"] = batch["first_pos"][:, cand]
    return out


def draftable(batch: dict, columns: torch.Tensor, base_size: int) -> torch.Tensor | None:
    """Context rows: [B, n_pos, C] bool, whether row p of each sequence may use each of `columns` [C] (of
    Batches.vocab): a draft-vocabulary column always, another once its id is among tokens 0 .. p + 1 of the text, as
    a head drafting after them would have it. None without context rows (every column)."""
    if "first_pos" not in batch:
        return None
    return usable_by_row(batch["first_pos"], columns < base_size, batch["tidx"].shape[1])


def soft_ce(logits: torch.Tensor, tidx: torch.Tensor, tprob: torch.Tensor, valid: torch.Tensor,
            allowed: torch.Tensor | None = None):
    """Mean over valid rows of -sum_j p_j log q(id_j); plus top-1 agreement (count, total). allowed [B, T, C]:
    the columns each row may use (draftable; q = 0 elsewhere and the teacher's mass there dropped, the rest renormed)."""
    if allowed is not None:
        logits = logits.masked_fill(~allowed, float("-inf"))
        tprob = tprob * allowed.gather(-1, tidx)
        mass = tprob.sum(-1, keepdim=True)
        valid = valid & (mass[..., 0] > 0)
        tprob = tprob / mass.clamp(min=1e-6)
    logq = torch.log_softmax(logits.float(), dim=-1)
    loss = -(torch.where(tprob > 0, logq.gather(-1, tidx), 0.0) * tprob).sum(-1)
    v = valid.float()
    agree = ((logits.argmax(-1) == tidx[..., 0]) & valid).sum()
    return (loss * v).sum() / v.sum().clamp(min=1), int(agree), int(valid.sum())


class Trainer:
    """A minimal AdamW loop with warm-up and cosine decay over a known number of steps."""

    def __init__(self, params, cfg: TrainConfig, total_steps: int, log=print, name: str = ""):
        self.params = [p for p in params if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))
        self.cfg, self.total, self.step_i, self.log, self.name = cfg, max(total_steps, 1), 0, log, name
        self.start = time.time()
        self.stats = {"loss": 0.0, "agree": 0, "count": 0, "n": 0}

    def lr(self) -> float:
        if self.step_i < self.cfg.warmup_steps:
            return self.cfg.lr * (self.step_i + 1) / self.cfg.warmup_steps
        progress = min(1.0, (self.step_i - self.cfg.warmup_steps) / max(1, self.total - self.cfg.warmup_steps))
        return self.cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    def step(self, loss: torch.Tensor, agree: int, count: int) -> None:
        for group in self.opt.param_groups:
            group["lr"] = self.lr()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        self.opt.step()
        self.step_i += 1
        s = self.stats
        s["loss"] += float(loss.detach())
        s["agree"] += agree
        s["count"] += count
        s["n"] += 1
        if self.step_i % 10 == 0 or self.step_i == self.total:
            self.log(f"[{self.name}] step {self.step_i}/{self.total} loss {s['loss'] / s['n']:.3f} "
                     f"top1 agreement {s['agree'] / max(s['count'], 1):.3f} lr {self.lr():.2e} "
                     f"{time.time() - self.start:.0f} s")
            self.stats = {"loss": 0.0, "agree": 0, "count": 0, "n": 0}

    def out_of_time(self) -> bool:
        return self.cfg.time_budget_s is not None and time.time() - self.start > self.cfg.time_budget_s


def _steps(batches: Batches, cfg: TrainConfig) -> int:
    if cfg.max_steps is not None:
        return cfg.max_steps
    return max(1, int(len(batches.groups) * cfg.epochs))


def _loop(batches: Batches, cfg: TrainConfig, trainer: Trainer, fn, w_full: torch.Tensor | None = None,
          checkpoint=None) -> dict:
    """Runs fn(batch, w) until the planned steps (w: the head rows the loss uses: all of the draft
    vocabulary, or the sampled candidates with the batch's targets re-indexed); checkpoint(record) is called
    after the steps cfg.checkpoints names (fractions of the plan)."""
    gen = torch.Generator().manual_seed(cfg.seed)
    neg = torch.Generator().manual_seed(cfg.seed + 7)
    inner = fn

    def fn(batch):
        if w_full is None:
            return inner(batch, w_full)
        if cfg.negatives is None:
            columns, w = torch.arange(len(w_full)), w_full
        else:
            columns = candidates(batch, batches.base_size, cfg.negatives, neg)
            batch, w = restrict(batch, columns, len(w_full)), w_full[columns]
        allowed = draftable(batch, columns, batches.base_size)
        return inner(batch if allowed is None else {**batch, "allowed": allowed}, w)

    total = trainer.total
    marks = {round(f * total) for f in cfg.checkpoints} - {0, total}  # the last step's head is the result itself
    while trainer.step_i < total:
        for batch in batches.epoch(gen):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.autocast):
                loss, agree, count = fn(batch)
            trainer.step(loss, agree, count)
            if checkpoint is not None and trainer.step_i in marks:
                checkpoint({"steps": trainer.step_i, "planned_steps": total,
                            "seconds": time.time() - trainer.start, "stopped_by_time_budget": False})
            if trainer.step_i >= total or trainer.out_of_time():
                return {"steps": trainer.step_i, "planned_steps": total, "seconds": time.time() - trainer.start,
                        "stopped_by_time_budget": trainer.out_of_time()}
    return {"steps": trainer.step_i, "planned_steps": total, "seconds": time.time() - trainer.start,
            "stopped_by_time_budget": False}


def _frozen_head(target_model, vocab: torch.Tensor):
    return target_model.get_output_embeddings().weight.detach()[vocab].float().contiguous()


def _rope(config, batch, n, shift: int = 0):
    cos, sin = rope_tables(config, n + shift, torch.float32)
    return cos[None, shift:], sin[None, shift:]


def train_eagle(target_model, batches: Batches, vocab: torch.Tensor, cfg: TrainConfig, log=print, checkpoint=None,
                init_state: dict[str, torch.Tensor] | None = None):
    """An EAGLE head (cfg.feature_layers: an EAGLE-3 head); checkpoint(head, record) at cfg.checkpoints.
    init_state: a trained head's state dict to go on training from (cfg.init_from) instead of the identity."""
    torch.manual_seed(cfg.seed)
    config = target_model.config
    head = EagleHead(config, cfg.eagle_layers, cfg.feature_layers, cfg.eagle_intermediate, cfg.eagle_input).float()
    head.init_identity(cfg.seed, target_model.model.norm.weight.detach())
    if init_state is not None:
        head.load_state_dict({k: v.float() for k, v in init_state.items()}, strict=True)
    head.float().train()
    w_full = _frozen_head(target_model, batches.vocab)  # vocab, then (context rows) the texts' other ids
    emb = target_model.get_input_embeddings().weight.detach().float()
    trainer = Trainer(head.parameters(), cfg, _steps(batches, cfg), log, "eagle")

    def fn(b, w):
        f, ids, valid = b["features"], b["ids"], b["valid"]
        g = head.fused(b["layers"]) if cfg.feature_layers else f  # the head's true features
        n = f.shape[1]
        # depth 0: row p = (feature p, token p + 1) -> predicted feature p + 1 -> token p + 2
        x = head.inputs(g, F.embedding(ids[:, 1:], emb))
        cos, sin = _rope(config, f.shape[0], n)
        pred, base_kvs = head.forward_sequences(x, cos, sin, return_kv=True)
        total, agree_all, count_all = 0.0, 0, 0
        chains = [[] for _ in head.layers]
        for depth in range(cfg.ttt_depth + 1):
            # row p predicts token p + 2 + depth, the teacher's target at position p + 1 + depth
            s = 1 + depth
            tgt_valid = torch.zeros_like(valid)
            tgt_valid[:, : n - s] = valid[:, s:]
            tidx = torch.zeros_like(b["tidx"])
            tidx[:, : n - s] = b["tidx"][:, s:]
            tprob = torch.zeros_like(b["tprob"])
            tprob[:, : n - s] = b["tprob"][:, s:]
            logits = F.linear(head.norm(pred), w)
            ce, agree, count = soft_ce(logits, tidx, tprob, tgt_valid, b.get("allowed"))
            weight = 1.0 if depth == 0 else 0.8 ** depth
            total = total + weight * ce
            if cfg.reg_weight:  # EAGLE's feature regression (EAGLE-3 drops it: reg_weight 0)
                treg = torch.zeros_like(f)
                treg[:, : n - s] = f[:, s:]
                reg = F.smooth_l1_loss(pred, treg, reduction="none").mean(-1)
                total = total + weight * cfg.reg_weight * (reg * tgt_valid).sum() / tgt_valid.sum().clamp(min=1)
            if depth == 0:
                agree_all, count_all = agree, count
            if depth == cfg.ttt_depth:
                break
            # next depth: row p = (predicted feature p + 1 + depth, token p + 2 + depth) at position p + s
            nxt_tok = torch.zeros_like(ids[:, 1:])
            nxt_tok[:, : n - s] = ids[:, 1 + s:]
            x = head.inputs(pred, F.embedding(nxt_tok, emb))
            cos_s, sin_s = rope_tables(config, n + s, torch.float32)
            pred, kvs = head.forward_unrolled(x, (cos_s[None, s:], sin_s[None, s:]), base_kvs, chains)
            for chain, kv in zip(chains, kvs):
                chain.append(kv)
        return total, agree_all, count_all

    saved = None if checkpoint is None else (lambda record: checkpoint(head, record))
    record = _loop(batches, cfg, trainer, fn, w_full, saved)
    return head.eval(), record


def train_medusa(target_model, batches: Batches, vocab: torch.Tensor, cfg: TrainConfig, log=print):
    torch.manual_seed(cfg.seed)
    heads = MedusaHeads(target_model.config, cfg.medusa_heads).float().train()
    w_full = _frozen_head(target_model, vocab)
    trainer = Trainer(heads.parameters(), cfg, _steps(batches, cfg), log, "medusa")
    pick = torch.Generator().manual_seed(cfg.seed + 1)

    def fn(b, w):
        f, valid = b["features"], b["valid"]
        n = f.shape[1]
        out = heads(f)  # [B, T, H, d]
        total, agree0, count0 = 0.0, 0, 0
        for h in range(out.shape[2]):
            s = 1 + h  # head h (Medusa head h + 1) predicts token p + 2 + h: the teacher's target at p + 1 + h
            if s >= n:
                break
            keep = valid[:, s:]
            if cfg.position_fraction < 1:
                keep = keep & (torch.rand(keep.shape, generator=pick) < cfg.position_fraction)
            logits = F.linear(out[:, : n - s, h][keep], w)
            ce, agree, count = soft_ce(logits, b["tidx"][:, s:][keep], b["tprob"][:, s:][keep],
                                       torch.ones(len(logits), dtype=torch.bool))
            total = total + ce * (0.8 ** h)
            if h == 0:
                agree0, count0 = agree, count
        return total, agree0, count0

    record = _loop(batches, cfg, trainer, fn, w_full)
    return heads.eval(), record


def train_layers(target_model, batches: Batches, vocab: torch.Tensor, cfg: TrainConfig, *, kind: str,
                 init_layers: list[int], log=print):
    """kind 'early': adapter layers over the hidden state after the target's first L layers;
    kind 'draft': own layers over the target's token embeddings. Returns (list of layers, record)."""
    torch.manual_seed(cfg.seed)
    config = target_model.config
    layers = torch.nn.ModuleList(copy.deepcopy(target_model.model.layers[i]) for i in init_layers).float().train()
    for p in layers.parameters():
        p.requires_grad_(True)
    norm_w = target_model.model.norm.weight.detach().float()
    eps = target_model.model.norm.variance_epsilon
    w_full = _frozen_head(target_model, vocab)
    emb = target_model.get_input_embeddings().weight.detach().float()
    trainer = Trainer(layers.parameters(), cfg, _steps(batches, cfg), log, kind)

    def fn(b, w):
        if kind == "early":
            x = b["early"]
        else:
            x = F.embedding(b["ids"][:, :-1], emb)
        cos, sin = _rope(config, x.shape[0], x.shape[1])
        for layer in layers:
            x = layer_forward(layer, x, cos, sin)
        from specdec.runners.static import rms_norm
        logits = F.linear(rms_norm(x, norm_w, eps), w)
        return soft_ce(logits, b["tidx"], b["tprob"], b["valid"])

    record = _loop(batches, cfg, trainer, fn, w_full)
    return layers.eval(), record
