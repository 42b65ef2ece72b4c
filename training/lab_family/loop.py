"""Training loop: AdamW, warmup + cosine LR, gradient clipping; corpus or distillation loss."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

LossFn = Callable[[torch.nn.Module, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Schedule:
    steps: int
    lr: float
    warmup_steps: int
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    clip_norm: float = 1.0

    def lr_at(self, step: int) -> float:
        if step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        progress = (step - self.warmup_steps) / max(1, self.steps - self.warmup_steps)
        cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
        return self.lr * (self.min_lr_ratio + (1.0 - self.min_lr_ratio) * cosine)


def make_optimizer(model: torch.nn.Module, schedule: Schedule) -> torch.optim.AdamW:
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": schedule.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=schedule.lr, betas=(0.9, 0.95), eps=1e-8)


def logits_of(model: torch.nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    return model(input_ids=inputs, use_cache=False).logits


def corpus_loss(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy on the corpus (hard labels)."""
    logits = logits_of(model, batch[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1).float(), batch[:, 1:].flatten())


def make_distill_loss(teacher: torch.nn.Module) -> LossFn:
    """KL(teacher || student) per position: the student learns the teacher's soft labels."""
    teacher.eval()

    def distill_loss(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
        inputs = batch[:, :-1]
        with torch.no_grad():
            target_logp = F.log_softmax(logits_of(teacher, inputs).float(), dim=-1)
        student_logp = F.log_softmax(logits_of(model, inputs).float(), dim=-1)
        return F.kl_div(student_logp.flatten(0, 1), target_logp.flatten(0, 1),
                        log_target=True, reduction="batchmean")

    return distill_loss


def train(model: torch.nn.Module, next_batch: Callable[[], torch.Tensor], schedule: Schedule,
          loss_fn: LossFn, log: Callable[[str], None], label: str) -> dict:
    """Run ``schedule.steps`` optimiser steps; returns tokens seen, wall seconds and losses."""
    model.train()
    optimizer = make_optimizer(model, schedule)
    start = time.perf_counter()
    tokens, recent = 0, []
    log_every = max(1, schedule.steps // 20)
    for step in range(schedule.steps):
        for group in optimizer.param_groups:
            group["lr"] = schedule.lr_at(step)
        batch = next_batch()
        loss = loss_fn(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), schedule.clip_norm)
        optimizer.step()
        tokens += batch[:, 1:].numel()
        recent = (recent + [loss.item()])[-log_every:]
        if (step + 1) % log_every == 0 or step + 1 == schedule.steps:
            elapsed = time.perf_counter() - start
            log(f"{label} step {step + 1}/{schedule.steps} loss {sum(recent) / len(recent):.3f} "
                f"lr {schedule.lr_at(step):.2e} {tokens / elapsed:,.0f} tok/s")
    model.eval()
    return {
        "steps": schedule.steps,
        "tokens_seen": tokens,
        "train_seconds": round(time.perf_counter() - start, 1),
        "final_train_loss": round(sum(recent) / max(1, len(recent)), 4),
    }
