"""``python -m training zoo``: data, training and export of the zoo drafters.

Stages (each can be run alone with --stage; data shards are reused when present):
  data   the target answers the training instructions (prompts.py); features, early hidden states and
         top-k logits are kept while it generates (data.generate_with_features)
  train  draft vocabulary, then eagle, eagle-3, medusa, early exit, draft model (train.py; a profile
         names the ones it trains by default), each saved to <out>/<name>/model.safetensors (bf16) with
         zoo.json: recipe, data, tokens, time, command; a TrainConfig's checkpoints go to
         <work>/checkpoints/<name>-step<N>-of-<planned>/ (the acceptance curve)
"""
from __future__ import annotations

import functools
import json
import platform
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from training.zoo.train import (
    Batches,
    TrainConfig,
    draft_vocabulary,
    train_eagle,
    train_layers,
    train_medusa,
    vocab_coverage,
)

NAMES = ("smollm2-135m-eagle", "smollm2-135m-medusa", "smollm2-135m-early-exit", "smollm2-135m-draft")
EAGLE3 = "smollm2-135m-eagle3"
TRAINABLE = NAMES + (EAGLE3,)


@dataclass(frozen=True)
class ZooProfile:
    name: str
    prompts: int  # training instructions built (prompts.build_prompts)
    gen_batch: int
    max_new_tokens: int
    gen_batches: int | None  # the first this many batches of the seeded order (None: all)
    gen_time_budget_s: float | None  # data generation also stops after this (recorded)
    exit_layer: int
    draft_vocab: int
    batch_tokens: int
    eagle: TrainConfig
    medusa: TrainConfig
    early: TrainConfig
    draft: TrainConfig
    draft_init_layers: tuple[int, ...] = (0, -1)
    dtype: str = "float32"  # the target's dtype while it generates the data and teaches (see TrainConfig.autocast)
    feature_layers: tuple[int, ...] = ()  # layers whose outputs the data keeps (EAGLE-3's input; data.py)
    eagle3: TrainConfig | None = None  # the EAGLE-3 head's recipe (needs feature_layers in the data)
    drafters: tuple[str, ...] = NAMES  # what --stage train trains without --only
    prompt_mix: str = "default"  # prompts.build_prompts' mix of instruction kinds
    asked_prompts: int = 0  # instructions the target writes itself (asked.py), answered into work/asked-shards too
    topic_source: str = "lists"  # chat topics: prompts.py's lists, or "vocabulary" (topics.py; kept in work/topics.json)
    draft_vocab_from: str | None = None  # a trained drafter's folder (relative: in work) whose draft vocabulary to keep
    widen_draft_vocab: bool = False  # with draft_vocab_from: that vocabulary joined with this data's own draft_vocab ids


# The shipped recipes, one flat config each. `bf16` trained the EAGLE head, Medusa, the early exit and the draft
# model (the CLI's default); `eagle3-asked-more` the EAGLE-3 head, going on from an earlier head's weights (<work>/init).
# How each came to be, and the recipes that were tried and not shipped: docs/notebook/ (docs/zoo.md links them).
# Amounts are fixed (the first gen_batches batches of the seeded prompt order, fixed epochs), so a command reproduces
# its weights; time budgets are safety caps only (a stage that hits one says so in its zoo.json).
EAGLE_RECIPE = TrainConfig(epochs=3, lr=1.5e-3, ttt_depth=3, reg_weight=0.1, autocast=True, time_budget_s=45 * 60)
MEDUSA_RECIPE = TrainConfig(epochs=2, lr=3e-3, position_fraction=0.5, autocast=True, time_budget_s=30 * 60)
EARLY_EXIT_RECIPE = TrainConfig(epochs=2, lr=2e-3, autocast=True, time_budget_s=35 * 60)
DRAFT_MODEL_RECIPE = TrainConfig(epochs=2, lr=2e-3, autocast=True, time_budget_s=50 * 60)
EAGLE3_FIRST_RECIPE = TrainConfig(epochs=5, lr=1.5e-3, ttt_depth=3, reg_weight=0.0, autocast=True,
                                  feature_layers=(2, 15, 27), eagle_intermediate=640, eagle_input="concat",
                                  checkpoints=(0.25, 0.5), time_budget_s=60 * 60)
EAGLE3_RECIPE = replace(EAGLE3_FIRST_RECIPE, lr=7.5e-4, init_from="init", checkpoints=(0.25, 0.5, 0.75))

PROFILES = {
    # For CPUs with native bfloat16 (AVX-512 BF16 / AMX): the target generates the data in bfloat16 (the features
    # the heads read at run time on such a CPU), the first 76 batches of 48 of 6,000 built instructions; every
    # drafter trains under bfloat16 autocast with float32 master weights; EAGLE's training-time test is unrolled to
    # depth 3 (the head also learns from its own predictions three steps on).
    "bf16": ZooProfile(
        name="bf16", prompts=6000, gen_batch=48, max_new_tokens=160, gen_batches=76, gen_time_budget_s=None,
        exit_layer=6, draft_vocab=12288, batch_tokens=1024, dtype="bfloat16",
        eagle=EAGLE_RECIPE, medusa=MEDUSA_RECIPE, early=EARLY_EXIT_RECIPE, draft=DRAFT_MODEL_RECIPE),
    # The EAGLE-3 head in vLLM's eagle3 layer ("concat" input), fusing the residual stream after layers 2, 15 and
    # 27 of 30 (EAGLE-3's low, middle and high layers), its MLP 640 wide (the target's: 1,536) so the shipped
    # drafters stay within 40 MB. Data: all 101 batches of 48 instructions, three quarters chat from the larger
    # template set (prompt_mix "chat"), plus the answers to 1,920 instructions the target wrote itself (asked.py).
    # Training in two stages on the same data: `eagle3-asked` trains 5 passes from scratch; `eagle3-asked-more`
    # 5 more passes from those weights (copied to <work>/init), the learning rate's cosine restarted at half its peak.
    "eagle3-asked": ZooProfile(
        name="eagle3-asked", prompts=6000, gen_batch=48, max_new_tokens=160, gen_batches=None,
        gen_time_budget_s=90 * 60, exit_layer=6, draft_vocab=12288, batch_tokens=1024, dtype="bfloat16",
        feature_layers=(2, 15, 27), drafters=(EAGLE3,), prompt_mix="chat", asked_prompts=1920,
        eagle=EAGLE_RECIPE, medusa=MEDUSA_RECIPE, early=EARLY_EXIT_RECIPE, draft=DRAFT_MODEL_RECIPE,
        eagle3=EAGLE3_FIRST_RECIPE),
    # seconds: the pipeline smoke tests (tiny random targets)
    "tiny": ZooProfile(
        name="tiny", prompts=6, gen_batch=3, max_new_tokens=6, gen_batches=None, gen_time_budget_s=None,
        exit_layer=1, draft_vocab=64, batch_tokens=256,
        eagle=TrainConfig(epochs=1, warmup_steps=1, ttt_depth=1, negatives=16),
        medusa=TrainConfig(epochs=1, warmup_steps=1, negatives=16),
        early=TrainConfig(epochs=1, warmup_steps=1), draft=TrainConfig(epochs=1, warmup_steps=1),
    ),
}
PROFILES["eagle3-asked-more"] = replace(PROFILES["eagle3-asked"], name="eagle3-asked-more", eagle3=EAGLE3_RECIPE)
PROFILES["tiny-eagle3"] = replace(
    PROFILES["tiny"], name="tiny-eagle3", feature_layers=(1, 2), drafters=(EAGLE3,),
    eagle3=replace(PROFILES["tiny"].eagle, reg_weight=0.0, feature_layers=(1, 2), eagle_intermediate=16,
                   max_steps=4, checkpoints=(0.5,)))


def prompt_length(record: dict, tokenizer) -> int:
    """Tokens before the answer (records from before prompt_len was stored: after the last <|im_start|>
    the template adds 'assistant' and a newline)."""
    if "prompt_len" in record:
        return record["prompt_len"]
    start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    ids = record["ids"]
    last = max(i for i, t in enumerate(ids) if t == start)
    return last + 3


def trained_head_state(folder: Path, vocab: torch.Tensor) -> tuple[dict[str, torch.Tensor], str]:
    """A trained head's weights (folder/model.safetensors) to go on training from, and the init note for zoo.json
    (the file's sha256, so the run can be traced to the weights it started from). Its draft vocabulary must be within
    this run's: the head has no weight per id (the target's own head rows read its output), but a run over fewer ids
    would drop tokens the head learnt to put first (a wider one: profile.widen_draft_vocab)."""
    import hashlib

    from specdec.drafters.shipped import load_tensors

    tensors = load_tensors(folder)
    if not bool(torch.isin(tensors["draft_vocab"].long(), vocab.long()).all()):
        raise ValueError(f"{folder} drafts ids this run's draft vocabulary lacks: train it on its own data, or keep or "
                         "widen its vocabulary (draft_vocab_from, widen_draft_vocab)")
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    state = {k[len("head."):]: v for k, v in tensors.items() if k.startswith("head.")}
    return state, f"the trained head {folder} (model.safetensors sha256 {digest})"


def load_target_for_training(dtype: str = "float32"):
    """The frozen target in `dtype` (a profile's data dtype) with its tokenizer, from the fetch cache."""
    from specdec.models.fetch import ensure_model

    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = ensure_model("smollm2-135m-instruct")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tokenizer, str(folder)


def default_work(profile_name: str) -> Path:
    """A profile's own work folder (data shards, logs, checkpoints): shards are named by batch index, and batch sizes
    differ between profiles."""
    return Path.home() / ".cache" / "specdec" / "zoo-work" / profile_name


def chat_topics(model, tokenizer, work: Path, source: str, log=print) -> list[str] | None:
    """The chat topics of a profile's data: None for prompts.py's lists; "vocabulary": topics.vocabulary_topics,
    chosen once and kept in work/topics.json (the choice reads the target: a run resumed later keeps its list)."""
    if source == "lists":
        return None
    if source != "vocabulary":
        raise ValueError(f"topic_source must be 'lists' or 'vocabulary', not {source!r}")
    from training.zoo.topics import vocabulary_topics

    path = Path(work) / "topics.json"
    if not path.exists():
        topics = vocabulary_topics(model, tokenizer)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"source": source, "topics": topics}, indent=0))
        log(f"topics: {len(topics)} words of the target's vocabulary")
    return json.loads(path.read_text())["topics"]


def build_zoo(model, tokenizer, out: Path, work: Path, profile: ZooProfile, *, seed: int = 0, command: str = "",
              stage: str = "all", prompts=None, only: tuple[str, ...] | None = None, log=print) -> dict:
    from specdec.drafters.shipped import load_tensors, save_tensors

    from training.zoo.asked import asked_prompts
    from training.zoo.data import generate_with_features, load_shards, system_prefix_length
    from training.zoo.prompts import build_prompts

    torch.manual_seed(seed)
    only = profile.drafters if only is None else only
    out, work = Path(out), Path(work)
    shards = work / "shards"
    summary = {"profile": profile.name, "seed": seed, "command": command}
    if stage in ("all", "data"):
        if prompts is None:
            topics = chat_topics(model, tokenizer, work, profile.topic_source, log)
            prompts = build_prompts("train", profile.prompts, seed=seed, mix=profile.prompt_mix, chat_topics=topics)
        t0 = time.time()
        answer = functools.partial(  # the profile's way of answering instructions, whoever wrote them
            generate_with_features, model, tokenizer, exit_layer=profile.exit_layer, batch_size=profile.gen_batch,
            max_new_tokens=profile.max_new_tokens, seed=seed, time_budget_s=profile.gen_time_budget_s,
            feature_layers=profile.feature_layers, log=log)
        gen = answer(prompts, shards, max_batches=profile.gen_batches)
        if profile.asked_prompts:
            gen["asked"] = answer(asked_prompts(model, tokenizer, work, profile.asked_prompts, seed=seed, log=log),
                                  work / "asked-shards")
        gen["wall_s"] = time.time() - t0  # this call only (a resumed run adds to earlier ones)
        (work / "data.json").write_text(json.dumps(gen, indent=1))
        summary["data"] = gen
        if stage == "data":
            return summary
    order = json.loads((shards / "order.json").read_text())["order"]
    records = load_shards(shards, order[: profile.gen_batches] if profile.gen_batches else None)
    if profile.asked_prompts:
        records += load_shards(work / "asked-shards")
    skip = system_prefix_length(tokenizer)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    vocab = draft_vocabulary(records, profile.draft_vocab, skip, eos, model.config.vocab_size)
    if profile.draft_vocab_from:  # training goes on from a head on other data: the ids it learnt to draft stay
        kept = load_tensors(work / profile.draft_vocab_from)["draft_vocab"].long()
        vocab = torch.cat([kept, vocab]).unique() if profile.widen_draft_vocab else kept
    data_note = {
        "source": "self-distillation: the target's own answers (half greedy, half T=0.7) to templated training "
                  "instructions (chat prose, code, rewriting; prompts.py), built offline from topic lists and the "
                  "CPython standard library's source and docs (PSF License 2.0); held-out topics, tasks and "
                  "passages are never used" + ("; and to instructions the target wrote itself (asked.py), none "
                                               "naming a held-out topic or using a held-out template's wording"
                                               if profile.asked_prompts else "")
                  + ("; chat topics: words of the target's vocabulary (topics.py), none naming a held-out topic"
                     if profile.topic_source == "vocabulary" else ""),
        "sequences": len(records),
        "tokens": sum(len(r["ids"]) for r in records),
        "answer_tokens": sum(len(r["ids"]) - prompt_length(r, tokenizer) for r in records),
        "by_kind": {k: sum(1 for r in records if r["kind"] == k) for k in sorted({r["kind"] for r in records})},
        "by_mode": {k: sum(1 for r in records if r["mode"] == k) for k in ("greedy", "T0.7")},
        "draft_vocab": len(vocab),
        "draft_vocab_top1_coverage": vocab_coverage(records, vocab, skip),
    }
    gen_path = work / "data.json"
    if gen_path.exists():
        data_note["generation"] = json.loads(gen_path.read_text())
    log(f"data: {json.dumps(data_note)}")
    if EAGLE3 in only and "layers" not in records[0]:
        raise ValueError(f"{EAGLE3} reads the target's layer outputs, which these shards do not keep: make the data "
                         "with a profile that has feature_layers (--profile eagle3)")
    batches = Batches(records, vocab, skip, profile.batch_tokens)
    base = {"target": "smollm2-135m-instruct", "profile": profile.name, "seed": seed, "command": command,
            "machine": f"{platform.machine()} CPU, {torch.get_num_threads()} threads, torch {torch.__version__}, "
                       f"target in {profile.dtype}",
            "data": data_note, "trained_tokens_per_epoch": batches.tokens()}
    config = model.config
    results = {}

    def save(name, tensors, meta, cfg, record):
        meta = {**base, **meta, "train_config": asdict(replace(cfg, batch_tokens=profile.batch_tokens)),
                "training": record}
        save_tensors(out / name, tensors, meta)
        results[name] = meta
        log(f"saved {name}: {json.dumps(record)}")

    for name, recipe in (("smollm2-135m-eagle", profile.eagle), (EAGLE3, profile.eagle3)):
        if name not in only:
            continue
        cfg = replace(recipe, seed=seed)
        meta = {"family": "eagle", "layers": cfg.eagle_layers,
                "init": "identity (fc passes the feature; the layers' output projections zero)"}
        if cfg.feature_layers:
            meta.update(feature_layers=list(cfg.feature_layers), intermediate_size=cfg.eagle_intermediate,
                        init="identity, the fused feature starting as the highest layer's state through the target's "
                             "final norm (fc passes it; the layers' output projections zero)")
        if cfg.eagle_input != "fc":
            meta.update(input_layout=cfg.eagle_input,
                        init="identity, the fused feature starting as the highest layer's state (the residual; the "
                             "head's norm is the target's final norm; the layer's output projections zero)")

        def tensors_of(head):
            return {**{f"head.{k}": v for k, v in head.state_dict().items()}, "draft_vocab": vocab.int()}

        def checkpoint(head, record, name=name, cfg=cfg, meta=meta):
            # named by planned steps too: runs of other lengths on the same data keep their own curves
            folder = work / "checkpoints" / f"{name}-step{record['steps']}-of-{record['planned_steps']}"
            save_tensors(folder, tensors_of(head), {**base, **meta, "training": record,
                                                    "train_config": asdict(cfg)})
            log(f"checkpoint {folder}")

        init_state = None
        if cfg.init_from:
            init_state, meta["init"] = trained_head_state(work / cfg.init_from, vocab)  # an absolute path stays
        head_batches = Batches(records, vocab, skip, profile.batch_tokens, context_rows=True) if cfg.context_rows \
            else batches
        head, record = train_eagle(model, head_batches, vocab, cfg, log=log, checkpoint=checkpoint,
                                   init_state=init_state)
        save(name, tensors_of(head), meta, cfg, record)
    if "smollm2-135m-medusa" in only:
        cfg = replace(profile.medusa, seed=seed)
        heads, record = train_medusa(model, batches, vocab, cfg, log=log)
        tensors = {f"heads.{k}": v for k, v in heads.state_dict().items()}
        tensors["draft_vocab"] = vocab.int()
        save("smollm2-135m-medusa", tensors, {"family": "medusa", "heads": cfg.medusa_heads,
                                          "init": "zero (every block starts as the identity)"}, cfg, record)
    if "smollm2-135m-early-exit" in only:
        cfg = replace(profile.early, seed=seed)
        layers, record = train_layers(model, batches, vocab, cfg, kind="early", init_layers=[profile.exit_layer],
                                      log=log)
        tensors = {f"layers.{i}.{k}": v for i, layer in enumerate(layers) for k, v in layer.state_dict().items()}
        tensors["draft_vocab"] = vocab.int()
        save("smollm2-135m-early-exit", tensors,
             {"family": "early exit", "exit_layer": profile.exit_layer, "adapter_layers": len(layers),
              "init": f"layer {profile.exit_layer}"}, cfg, record)
    if "smollm2-135m-draft" in only:
        cfg = replace(profile.draft, seed=seed)
        init = [i % config.num_hidden_layers for i in profile.draft_init_layers]
        layers, record = train_layers(model, batches, vocab, cfg, kind="draft", init_layers=init, log=log)
        tensors = {f"layers.{i}.{k}": v for i, layer in enumerate(layers) for k, v in layer.state_dict().items()}
        tensors["draft_vocab"] = vocab.int()
        save("smollm2-135m-draft", tensors,
             {"family": "draft model", "layers": len(layers), "init": f"target layers {init}"}, cfg, record)
    summary["drafters"] = results
    return summary
