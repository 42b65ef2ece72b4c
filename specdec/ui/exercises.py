"""The workshop tour's exercises, as plain data: the settings each loads, its learning goal, what to predict,
its question and its answer.

An exercise names app components by their keys in layout.py's component dict (prompt, k, temperature, …,
and the tab to open); tabs/tour/callbacks.py turns one into a {component name: value} update and composes the answer
from what the learner measured (its `evidence`) followed by the general `explanation` here. Nothing in
these texts is a measured figure: the figures come from the learner's own runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from specdec.exactness.verifier_faults import ALWAYS_ACCEPT, REAL
from specdec.models.presets import DEFAULT_TARGET, LAB_DRAFT, LAB_TARGET

MODEL_DRAFT = "smollm2-135m-draft"  # the zoo's 2-layer distilled draft for SmolLM2 (docs/zoo.md)
LAB_CODE = "import json\n\n\ndef load_config(path):\n"  # the lab family knows Python's standard library
LAB_PROSE = "The json module can be used to"
REWRITE = ("Correct the spelling in this paragraph and return the whole paragraph:\n\nThe libary opens at nine "
           "oclock on weekdays and at ten on saturdays. Visitors can borow up to five books at a time, and books "
           "must be returned within three weeks. Late returns are charged a smal fee for each day.")
OPEN = "What makes a good teacher? Answer in a few sentences."
CHAT_PROSE = "Explain how a rainbow forms, in simple terms."

@dataclass(frozen=True)
class SweepSetup:
    """The Sweep tab's own fields (its drafts, K values, temperatures and tokens per run)."""

    drafts: tuple[str, ...]
    ks: str
    temperatures: str
    tokens: int


@dataclass(frozen=True)
class Exercise:
    key: str
    title: str  # the button's label
    question: str  # Markdown: what to do, then what to find out
    explanation: str  # Markdown: the general answer, shown after the learner's own figures
    prompt: str
    goal: str  # plain words: what the learner should come away knowing (the stepper and the handout show it)
    predict: str  # what to guess before pressing Run (the prediction box's hint and the handout's blank)
    target: str = DEFAULT_TARGET
    draft: str = MODEL_DRAFT
    k: int = 4
    k_schedule: str = "constant"
    temperature: float = 0.0
    top_p: float = 1.0  # 1 = off
    top_k: int = 0  # 0 = off
    seed: int = 0
    max_new_tokens: int = 64
    chat: bool = True
    tab: str = "generate"  # the gr.Tab id to open
    evidence: str = "run"  # what the answer quotes: "run" (Generate's last run), "sweep", "lossless"
    compare: tuple[str, ...] = ()  # earlier exercises whose recorded figures the answer quotes too
    sweep: Optional[SweepSetup] = None
    extra: tuple[tuple[str, object], ...] = ()  # other components (by their names in layout's dict) and values
    minutes: int = 6


LAB = dict(target=LAB_TARGET, draft=LAB_DRAFT, chat=False)  # the bundled pair: instant on any laptop

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        key="greedy", title="Greedy agreement", prompt=LAB_CODE, **LAB,
        goal="At temperature 0 a drafted token is kept exactly when it is the target's own first choice.",
        predict="What share of the drafted tokens will the target accept?",
        question="The bundled lab pair on Python code. Press **Run** in the Generate tab. Before it ends, guess: "
                 "what share of the drafted tokens will the target accept at temperature 0? Then read the "
                 "acceptance-rate card and look at where the struck-through (rejected) tokens sit.",
        explanation="At temperature 0 the verifier accepts a drafted token exactly when it is the target's own top "
                    "choice, so the acceptance rate measures how often two models' argmaxes agree. The draft here "
                    "(2 layers) was distilled from this very target (6 layers) on the same Python corpus, so on "
                    "code it agrees with most of the target's choices; it misses where the target makes a real "
                    "choice (a new name, the start of a new statement). A rejection ends the step: the tokens "
                    "drafted after it are discarded unchecked (faint), which is why **acceptance rate** (accepted / "
                    "drafted) is lower than **α** (accepted / evaluated). Greedy speculative output is token for "
                    "token the target's own."),
    Exercise(
        key="hot", title="Sampling at T = 1.2", prompt=LAB_CODE, temperature=1.2, compare=("greedy",), **LAB,
        goal="Sampling keeps a drafted token with probability min(1, p/q): whole distributions must overlap, not "
             "just top choices.",
        predict="Acceptance at T = 1.2: higher or lower than in exercise 1?",
        question="Same prompt, draft and seed, now sampling at temperature 1.2. Press **Run**. Does the acceptance "
                 "rate go up or down compared with exercise 1? Is the (odd) text still what the target alone "
                 "would produce?",
        explanation="When sampling, a drafted token x is accepted with probability min(1, p(x)/q(x)), and after a "
                    "rejection the target draws a resampled token from norm(max(0, p − q)). On average a draft token is "
                    "accepted with probability Σ min(p(x), q(x)) = 1 − the total-variation distance between the "
                    "two distributions. Greedy needs only the two top choices to agree; sampling needs the whole "
                    "distributions to overlap. Where the target is confident (code) the top choices agree and "
                    "sampling adds chances to draw a token the two models weight differently, so acceptance usually "
                    "falls; where both are unsure (prose) their top choices can differ by a hair while their "
                    "distributions still overlap well, and sampling can accept more than greedy. Either way the "
                    "output is distributed exactly as the target's at T = 1.2 — a small model sampled hot writes "
                    "odd text on its own too (exercise 7 tests that claim)."),
    Exercise(
        key="code", title="Code vs prose", prompt=LAB_PROSE, compare=("greedy",), **LAB,
        goal="Text the context decides (code) is easier to guess ahead than free prose.",
        predict="Prose: accepted more or less often than code?",
        question="The same pair, greedy, on a sentence of documentation prose instead of code. Press **Run**. Is "
                 "prose easier or harder for the draft to guess than the code of exercise 1? Look at the "
                 "acceptance-by-position plot as well as the card.",
        explanation="Code is full of tokens the context decides: indentation, brackets, colons, keywords, a name "
                    "repeated from a line above. A small draft guesses those as well as the target does, so code "
                    "usually reaches a higher acceptance rate and more tokens per target forward than prose, where "
                    "each content word is a real choice. The per-position plot shows how the chance of reaching a "
                    "position falls along the draft: a token is only evaluated when all before it were accepted."),
    Exercise(
        key="rewrite", title="Copying with prompt lookup", prompt=REWRITE, draft="prompt-lookup", k=6,
        goal="A drafter with no model at all wins when the answer copies the prompt.",
        predict="Tokens per target forward, and is the speedup above 1?",
        max_new_tokens=96,
        question="SmolLM2-135M-Instruct now, the real model. Prompt lookup has no model: it finds the last two tokens (failing that, the last one) earlier in "
                 "the prompt or the output and proposes what followed them. On this rewriting task press **Run**: "
                 "how many tokens per target forward does it reach, and is the measured speedup above 1?",
        explanation="A corrected paragraph copies most of its input, so the last two tokens usually occurred before "
                    "and what followed them is what the target writes next: long runs of accepted (green) tokens "
                    "that cost nothing to propose (c ≈ 0). The speedup is then about tokens per forward divided by "
                    "v(K), the cost of verifying K+1 tokens relative to one plain step. Where v(K) is near 1 (a "
                    "GPU) many tokens per forward become a large speedup; where it is well above 1 (this kind of "
                    "CPU in float32) the gain shrinks — the Sweep measures v(K) on this machine."),
    Exercise(
        key="open", title="Prompt lookup on an open question", prompt=OPEN, draft="prompt-lookup", k=6,
        goal="The same drafter gains nothing when there is nothing to copy.",
        predict="Tokens per target forward, compared with exercise 4?",
        max_new_tokens=96, compare=("rewrite",),
        question="Same drafter, an open question: nothing in the prompt to copy. Press **Run**. What happens to "
                 "tokens per target forward and to the speedup compared with exercise 4? Look at the K line in "
                 "the accepted-length plot.",
        explanation="Prompt lookup still finds the last token or two somewhere earlier (a common word, a repeated "
                    "phrase of the answer) and proposes what followed there, but in a fresh answer that is rarely "
                    "what the target writes next: short accepted runs, many rejections, and steps where nothing "
                    "matched (K shows what each step drafted). Proposing costs nothing, yet verifying the proposal "
                    "makes each target forward longer (v(K) > 1 off a GPU), so the speedup sits near 1 or below it. "
                    "Prompt lookup pays on input-grounded tasks: rewriting, editing, answering about a given text."),
    Exercise(
        key="best_k", title="Find the best K (Sweep)", prompt=LAB_CODE, tab="sweep", evidence="sweep", minutes=10,
        goal="A longer draft pays only while its tokens are accepted; the textbook formula overshoots on this "
             "machine.",
        predict="Which K will be fastest here?",
        sweep=SweepSetup(drafts=(LAB_DRAFT,), ks="1-8", temperatures="0", tokens=64), **LAB,
        question="In the Sweep tab, press **Run sweep** (it measures a speedup at each K). Which K is fastest on "
                 "this machine, and which K does the textbook formula E / (K·c + 1) pick with your measured α and "
                 "c? Why might they differ?",
        explanation="A longer draft buys more tokens per step only while its tokens are accepted — position i is "
                    "reached with probability α^i — but every drafted token costs a draft forward (c) and makes the "
                    "verification forward longer. The textbook form assumes verifying K+1 tokens costs one plain "
                    "step (v = 1), as on a GPU at batch 1; the measured form E / (K·c + v(K)) uses the cost this "
                    "machine really pays. Where v(K) grows with K, the measured best K is smaller than the "
                    "textbook's, and the How it works tab shows each form's error against your points."),
    Exercise(
        key="break", title="Break the verifier", prompt=CHAT_PROSE, draft=MODEL_DRAFT, temperature=1.0,
        goal='"Exact" is a claim you can test, and the test fails when the verifier is broken.',
        predict="Which figure will show that the broken verifier is not exact?",
        tab="lossless", evidence="lossless", minutes=8,
        extra=(("lossless_verifier", REAL), ("lossless_tokens", 1), ("lossless_draws", 20_000)),
        question="In the **Is it exact?** tab, press **Check** with the real verifier, then choose a broken one "
                 f"(e.g. {ALWAYS_ACCEPT!r}) and check again. Which figure tells you the output is no longer the "
                 "target's distribution, and how sure can you be?",
        explanation="The test draws the first generated token(s) many times from the speculative engine and from "
                    "the target alone, with the same warping, and tests each side against the target's exact "
                    "probabilities: a chi-square p-value (p ≥ 0.001 passes: an exact engine fails 1 time in 1,000) "
                    "and the total-variation distance. With the real verifier the speculative side looks like the "
                    "target-alone side: differences are sampling noise. A verifier that always accepts outputs the "
                    "draft's distribution, and one that skips the residual correction over-represents what the "
                    "draft proposes; with thousands of draws the p-value collapses towards 0 — the test has teeth. "
                    "The greedy check compares the two decoders token by token; in reduced precision a near-tie "
                    "can flip, which is numerics, not the algorithm."),
    Exercise(
        key="weak", title="A draft that slows you down", prompt=CHAT_PROSE, draft=LAB_DRAFT, k=8,
        goal="A draft that rarely agrees with the target makes decoding slower than the target alone.",
        predict="Faster or slower than the target alone?",
        compare=("rewrite",),
        question=f"Back to SmolLM2, with {LAB_DRAFT} as its draft: trained on Python's standard library, not on "
                 "chat, and with another tokenizer (its text is re-tokenised for the target). At K = 8 press "
                 "**Run**: is speculation faster or slower than the target alone, and what does each rejected "
                 "step cost?",
        explanation="Speedup ≈ E / (K·c + v(K)). With α near 0, E is about 1 token per target forward, yet every "
                    "step still pays K draft forwards, the re-tokenisation, and a verification over K+1 tokens "
                    "instead of 1. A draft that rarely agrees with the target makes decoding slower than the target "
                    "alone, and a large K makes it worse. A draft earns its place by agreeing with the target "
                    "cheaply: same tokenizer, trained on the target's own outputs, a K matched to its α."),
    Exercise(
        key="load", title="Where speculation stops paying", prompt=CHAT_PROSE, draft="prompt-lookup", k=4,
        tab="load", evidence="load", minutes=6,
        goal="Verifying K + 1 tokens is nearly free for one request but real work for many: as requests share the "
             "engine, speculation's gain shrinks and can turn into a loss.",
        predict="From how many concurrent requests on will speculation stop paying?",
        question="Open the **Under load** tab: a vLLM server with speculation against the same server without, "
                 "at 1 to 32 requests at once. Before you read the plots, predict: from how many concurrent "
                 "requests on is the speculative server no faster than the baseline? Then read the speedup plot: "
                 "where is the measured crossover, and where does the cost model put it on an H100?",
        explanation="A server runs every request it holds in one forward per step. Alone, a step is bound by "
                    "reading the weights, so verifying K + 1 tokens costs little more than one token and the "
                    "accepted drafts are nearly free. With many requests the same weights serve many rows and the "
                    "step does real work for each: verifying K + 1 rows per request now costs nearly K + 1 times "
                    "as much, while the baseline's throughput keeps growing with the batch. The speedup tends to "
                    "(tokens per step) / (1 + drafts per step), below 1 unless nearly every draft is accepted, so "
                    "past the crossover speculation costs throughput and latency. Where that happens depends on "
                    "the device's ridge point and overheads: a CPU turns compute-bound at a few rows, a GPU only "
                    "at far larger batches. Production engines therefore turn speculation down as the batch grows "
                    "(vLLM's K by batch size, `vllm serve --k-by-batch`)."),
)

def find_exercise(key: Optional[str]) -> Optional[Exercise]:
    return next((e for e in EXERCISES if e.key == key), None)


def exercise_number(exercise: Exercise) -> int:
    return EXERCISES.index(exercise) + 1


def exercise_label(exercise: Exercise) -> str:
    """The exercise as the class board and the tour name it: 'Exercise 1: Greedy agreement'."""
    return f"Exercise {exercise_number(exercise)}: {exercise.title}"
