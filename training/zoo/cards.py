"""Model cards for the zoo drafters: measured held-out figures written into assets/drafters/<name>/.

``write_cards`` loads the target as the app does (load_model: float32 on this CPU), builds every shipped
drafter through the registry, measures them (evaluate.py) on held-out prompts in the target's chat
template, and writes README.md (the card) and card.json (the figures) next to each drafter's weights. The
EAGLE heads' tree drafts (zoo.TREES) get cards of their own, in folders without weights.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from specdec.drafters.registry import FOLLOWS_TEXT
from specdec.models.dtypes import dtype_name
from specdec.runners.threads import threads_for_step

import torch

from training.zoo.evaluate import NEW_TOKENS, evaluate
from training.zoo.prompts import KINDS, heldout_prompts

KIND_NAMES = {"chat": "chat prose", "code": "code", "rewrite": "rewriting"}
# held-out prompts per kind: the `auto` drafter takes its prior alpha from these figures (auto_choice.card_alpha),
# and two prompts overrated held-out chat by a third (docs/zoo.md, "Measured")
PROMPTS_PER_KIND = 8


def _fmt(x, spec=".2f", none="–"):
    return none if x is None else format(x, spec)


def _load(out: Path, only: tuple[str, ...] | None = None):
    """The target, the shipped drafters (only: those named) and the tree drafts of the heads among them."""
    from specdec.drafters.registry import NAMES, TREES, WEIGHTS, load_drafter
    from specdec.models.loading import load_model

    from training.zoo.data import chat_ids

    target = load_model("smollm2-135m-instruct")
    drafters = {name: load_drafter(name, target) for name in NAMES
                if (out / name / "model.safetensors").exists() and (only is None or name in only)}
    trees = {name: load_drafter(name, target) for name in TREES if WEIGHTS[name] in drafters}
    return target, drafters, trees, chat_ids


def measure_all(out: Path, prompts_per_kind: int = PROMPTS_PER_KIND, log=print, only: tuple[str, ...] | None = None) -> dict:
    target, drafters, trees, chat_ids = _load(out, only)
    prompts = {k: [chat_ids(target.tokenizer, t) for t in v] for k, v in heldout_prompts(prompts_per_kind).items()}
    # warm-up (first calls allocate caches and pick kernels)
    from specdec.planning.run import generate
    from specdec.engine.events import DecodeSettings

    for d in [None, *drafters.values(), *trees.values()]:
        generate(target, d, prompts["chat"][0], DecodeSettings(max_new_tokens=8, k=4))
        generate(target, d, prompts["chat"][0], DecodeSettings(max_new_tokens=8, k=4, temperature=0.7))
    started, cpu_started = time.time(), time.process_time()
    measured = evaluate(target, drafters, prompts, log=log)
    if trees:  # measured apart: their greedy steps are slow here (a 61-token verification)
        tree_figures = evaluate(target, trees, prompts, log=log)
        measured = {key: {**measured[key], **tree_figures[key]} for key in measured}
    param_bytes = {n: d.param_bytes() for n, d in {**drafters, **trees}.items()}
    with threads_for_step(target.device):
        threads = torch.get_num_threads()  # what a decoding step computes on
    return {"figures": measured["figures"], "best_k_greedy_chat": measured["best_k"], "seconds": time.time() - started,
            "target_dtype": dtype_name(target.dtype), "runner": target.runner_kind,
            "prompts": heldout_prompts(prompts_per_kind),
            "machine": f"{platform.machine()} CPU, {threads} thread(s) per step, torch {torch.__version__}",
            "load_average": _loadavg(), "param_bytes": param_bytes,
            "own_cores": round((time.process_time() - cpu_started) / max(time.time() - started, 1e-9), 2)}


def _loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def _conditions(load_average: str, own_cores: float | None = None) -> str:
    """How busy the machine was: the load average at the end less the cores the measurement itself kept busy (its
    CPU time over its wall time: one thread per step, every core for prefills; without the figure, about one)."""
    own = 1.0 if own_cores is None else own_cores
    try:
        others = float(load_average) - own
    except ValueError:
        others = float("inf")
    figures = f"load average {load_average} at the end, {own:.2f} cores of it the measurement's own"
    if others <= 0.5:
        return f"Measured with nothing else running ({figures})."
    return f"Measured while other work shared the CPU ({figures}): speedups are noisy."


def _generation(data: dict) -> str:
    g = data.get("generation") or {}
    if not g:
        return "not recorded"
    asked = g.get("asked")
    return (f"{g.get('batches', '?')} batches of {g.get('batch_size', '?')} prompts"
            + (f" and {asked['batches']} of instructions the target wrote itself" if asked else "")
            + f" in {g.get('wall_s', 0) / 60:.0f} min" + (f" ({g['note']})" if g.get("note") else ""))


def card_text(name: str, meta: dict, m: dict) -> str:
    fig = m["figures"][name]
    weights_folder = f"../{meta['weights_of']}/" if meta.get("weights_of") else "this folder"
    lines = [f"# {name}", "", meta.get("description", ""), "",
             f"Family: **{meta['family']}**. Target: `smollm2-135m-instruct` (its tokenizer, embedding, norm and head "
             f"rows are the target's own; only the weights in {weights_folder} are new).", "",
             "## Measured (held-out prompts, this 2-core CPU)", "",
             f"Target in {m['target_dtype']} (runner: {m.get('runner', 'static')}), {m['machine']}; {len(m['prompts']['chat'])} held-out prompts per kind "
             f"(topics, tasks and passages never used in training), {NEW_TOKENS} new tokens, chat template. Speedup = tokens/s "
             "with this drafter over tokens/s of the target alone on the same prompt and settings (median over "
             "prompts; the target-only rate is the mean of greedy runs before and after the drafters' runs on that prompt). Tokens per target forward include the bonus/resampled token (plain decoding = 1.00). c = "
             f"draft time per drafted token / target time per verification forward. {_conditions(m['load_average'], m.get('own_cores'))}", "",
             "| setting | prompt kind | acceptance | tokens / target forward | c | speedup |",
             "|---|---|---|---|---|---|"]
    for sname in fig:
        label = "K=4 greedy" if sname == "greedy" else "K=4, T=0.7"
        for kind in KINDS:
            f = fig[sname][kind]
            lines.append(f"| {label} | {KIND_NAMES[kind]} | {_fmt(f['acceptance'])} | {_fmt(f['tokens_per_forward'])} | "
                         f"{_fmt(f['c'])} | {_fmt(f['speedup'])}x |")
    ks = m["best_k_greedy_chat"][name]
    best = max(ks, key=ks.get)
    lines += ["", "Greedy speedup by K (held-out chat prompts): "
              + ", ".join(f"K={k}: {v:.2f}x" for k, v in ks.items()) + f"; best K = {best}.", ""]
    if meta.get("weights_of"):
        lines += ["A tree step reports the kept branch plus the first rejected child after it as what it drafted "
                  "(docs/engine.md, \"Tree steps\"), so acceptance and c here are not comparable with a chain's; "
                  "tokens per target forward and speedup are. "
                  f"The weights and the recipe below are `{meta['weights_of']}`'s (../{meta['weights_of']}/).", ""]
    tr = meta.get("training", {})
    data = meta.get("data", {})
    lines += ["## How it was made", "",
              f"- Command: `{meta.get('command', '')}` (profile `{meta.get('profile')}`, seed {meta.get('seed')}), "
              f"on {meta.get('machine', '?')}.",
              f"- Data: {data.get('source', '')}. {data.get('sequences')} sequences, {data.get('tokens')} tokens "
              f"({data.get('answer_tokens')} of them the target's answers); by kind {data.get('by_kind')}; "
              f"by decoding {data.get('by_mode')}.",
              f"- Draft vocabulary: {data.get('draft_vocab')} ids (the target's most frequent first choices in the data, "
              f"then the lowest ids; they cover {_fmt(data.get('draft_vocab_top1_coverage'), '.3f')} of its first "
              "choices on the training data)"
              + ("; at run time the head also scores the ids of its request's text outside them (docs/zoo.md, "
                 "\"Draft vocabulary\")." if meta.get("family") in FOLLOWS_TEXT else "."),
              f"- Data generation: {_generation(data)}.",
              f"- Training: {tr.get('steps')} of {tr.get('planned_steps')} planned steps in {tr.get('seconds', 0) / 60:.1f} "
              f"min{' (stopped by its time budget)' if tr.get('stopped_by_time_budget') else ''}; config "
              f"`{json.dumps(meta.get('train_config', {}))}`.",
              f"- Initialisation: {meta.get('init', '')}.",
              f"- Weights: `model.safetensors`, bf16, {m['param_bytes'].get(name, 0) / 1e6:.1f} MB in memory at "
              "runtime (the file's new weights in the target's dtype, a gathered copy of the target's head rows of "
              "the draft vocabulary, and the packed copies the runs made of both: packed_weights.py).", ""]
    return "\n".join(lines)


def write_cards(out: Path, prompts_per_kind: int = PROMPTS_PER_KIND, log=print, only: tuple[str, ...] | None = None) -> dict:
    """Measures the shipped drafters (only: those named, with their tree drafts) and writes their cards."""
    out = Path(out)
    m = measure_all(out, prompts_per_kind, log=log, only=only)
    write_model_cards(out, m, log=log)
    return m


def write_model_cards(out: Path, m: dict, log=print) -> None:
    """README.md and card.json of every measured drafter from the measurement `m` and its zoo.json (a tree
    draft's: its head's)."""
    from specdec.drafters.registry import BY_NAME, TREES, WEIGHTS

    for name in m["figures"]:
        description = BY_NAME[name].description if name in BY_NAME else ""
        if name in TREES:
            meta = {**json.loads((out / WEIGHTS[name] / "zoo.json").read_text()), "description": description,
                    "weights_of": WEIGHTS[name]}
            (out / name).mkdir(exist_ok=True)
        else:
            meta = {**json.loads((out / name / "zoo.json").read_text()), "description": description}
        (out / name / "README.md").write_text(card_text(name, meta, m))
        card = {"figures": {s: {k: {x: y for x, y in f.items() if x != "rows"} for k, f in v.items()}
                            for s, v in m["figures"][name].items()},
                "rows": {s: {k: f["rows"] for k, f in v.items()} for s, v in m["figures"][name].items()},
                "best_k_greedy_chat": m["best_k_greedy_chat"][name],
                "param_bytes": m["param_bytes"].get(name),
                **{k: m.get(k) for k in ("target_dtype", "runner", "machine", "load_average", "own_cores", "prompts", "seconds")}}
        (out / name / "card.json").write_text(json.dumps(card, indent=1) + "\n")
        log(f"wrote card for {name}")
