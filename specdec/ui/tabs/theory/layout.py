"""The "How it works" tab: the algorithm, the two acceptance figures, what to expect (both theory forms), where the
memory goes and how a speedup is measured; the drafter families (from the drafter registry's family notes), the
same views on vLLM, and the last sweep's fit of both forms (theory_fit, which the Sweep's callback fills). Text
only: the tab has no callbacks of its own."""
from __future__ import annotations

from specdec.drafters.families import families_markdown
from specdec.ui.links import link_docs
from specdec.ui.vllm import engine as vllm_engine

import gradio as gr


def build(c: dict) -> None:
    """How it works: the algorithm, the drafter families (their `<name>` placeholders shown, not read as HTML
    tags), the same views on vLLM, and the last sweep's fit; docs/*.md references link to SPECDEC_DOCS_URL."""
    gr.Markdown(link_docs(THEORY))
    gr.Markdown(link_docs(families_markdown().replace("<", "&lt;")), elem_id="drafter-families")
    gr.Markdown(link_docs(vllm_engine.HOW_IT_WORKS), elem_id="vllm-how")
    c["theory_fit"] = gr.HTML(THEORY_FIT_EMPTY, elem_id="theory-fit", label="Theory vs measured", show_label=False)


THEORY_FIT_EMPTY = ('<div class="theory-fit">Run a sweep: both forms are then compared with your measured points '
                    'here.</div>')


THEORY = r"""
### The algorithm (Leviathan et al. 2023; Chen et al. 2023)
1. The draft proposes K tokens x₁…x_K autoregressively, with probabilities q(x).
2. The target scores all K+1 positions in **one** forward pass, giving p(x).
3. Each drafted token is accepted with probability **min(1, p(x)/q(x))** (a uniform draw u decides);
   at the first rejection the target samples a **resampled** token from the residual **norm(max(0, p − q))**.
   If all K are accepted, it adds a **bonus** token from p at position K+1.
4. Greedy decoding (temperature 0) accepts a draft token exactly when it is the target's argmax.

The output is distributed exactly as if the target had decoded alone: only the speed changes.

### Two acceptance figures (each labelled wherever it appears)
* **acceptance rate** = accepted / **drafted** tokens (the tokens discarded unchecked after a rejection
  count as drafted): what the cards and tables call acceptance rate (vLLM's "draft acceptance rate").
* **α** = accepted / **evaluated** drafted tokens: the per-token acceptance probability of the theory below.
  α ≥ acceptance rate; they differ most at large K.

### What to expect
With α, draft length K, c = draft forward time / target-only step time, and
**E = (1 − α^(K+1)) / (1 − α)** expected tokens per target forward (bonus included: vanilla = 1.00):

| form | speedup | assumes |
|---|---|---|
| textbook (Leviathan et al.) | **E / (K·c + 1)** | verifying K+1 tokens costs one plain step (v = 1) |
| measured | **E / (K·c + v(K))** | v(K) = a speculative step's target side (verifying K+1 tokens, bookkeeping) / a target-only step, **measured** |

e.g. α = 0.8, K = 4, c = 0.05 → textbook ≈ 2.8×. On a CPU, or whenever a forward's fixed costs do not
dominate, v(K) > 1 and the textbook form overestimates. The Sweep measures α, c and v(K) on this machine and
draws both forms over the measured speedups; the table below is filled by your last sweep.

### Where the memory goes
Speculative decoding spends memory to save time. On top of the target's weights and KV cache it needs the **draft
weights** (a separate draft model's; an early exit's adapter; Medusa or EAGLE heads' own layers plus their copy of the
target's head rows for the draft vocabulary; nothing for prompt lookup), the **draft KV cache** (the drafter's own
state: a draft model's cache for the whole sequence, the EAGLE head's one-layer cache, Medusa's last feature, and
the heads' rows of the text's own tokens outside their draft vocabulary) and
**verification slots**: the target's cache must hold K drafted positions beyond the run's own tokens. Verifying K+1
tokens at once also makes K+1 rows of activations and logits, which are transient: only the measured peak shows them.
Extra memory = draft weights + draft KV cache + verification slots, counted exactly; the Sweep plots each point's
speedup against it and marks the Pareto front. It matters when the target barely fits: a GPU nearly full with the
target's weights and cache has no room for a second model, while heads or prompt lookup still fit. On a CPU the
measured peak is the process's resident memory, a coarse figure.

### How a speedup is measured
The streamed run is for watching. The speedup is timed separately: speculative and target-only decoding run in
**pairs over the same number of new tokens** (the speculative run stops at max new tokens or end of text; the
target-only run then produces exactly as many tokens, going on past an end-of-text token of its own), the order
alternating within pairs, repeated until the interval is tight or a time budget ends (10 repeats or more; at least 3 for a very slow model). Shown:
the **median** of the per-pair ratios and a **95% interval** for it (distribution-free, from order statistics:
it needs 6 repeats); when the interval contains 1.0 the app says **no measurable difference**. Each
configuration (models, drafter, K and its schedule, warping, seed, max new tokens, prompt, device, dtype) is
measured **once per app**, shared by everyone who runs it: a request for a configuration being measured waits for
that measurement instead of starting a second, and the figure says how many runs it served and when it was
measured. On your own prompt (not one of the app's examples or exercises) the measurement is yours alone, and
nobody else sees it. Generate, Race and the exports show the same figure. No timed pair overlaps other work:
each pair has the machine to itself, and other users' streamed steps run between pairs. Identical deterministic
runs (greedy, or sampled with the same seed) requested at the same time are made once and streamed to each of
them. Tokens/s is engine time (model calls, sampling, bookkeeping, prefill), never UI rendering or waiting.
"""
