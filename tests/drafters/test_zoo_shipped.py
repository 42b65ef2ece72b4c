"""The shipped zoo drafters on the real target (SmolLM2-135M-Instruct, float32): greedy output is the
target's own, token for token, and each drafter's greedy acceptance on a fixed prompt is pinned
(regenerate the pins with `python -m training.zoo.pins` after retraining).

Skipped when the target cannot be loaded offline (not in the fetch cache and no network) or a
drafter's weights are not in assets/drafters/.
"""
from __future__ import annotations

from specdec import DecodeSettings
from specdec.drafters.registry import TREES
from specdec.planning.run import generate

import pytest

NAMES = ("smollm2-135m-draft", "smollm2-135m-early-exit", "smollm2-135m-medusa", "smollm2-135m-eagle",
         "smollm2-135m-eagle3")
PROMPT = "Explain why the sky is blue in two sentences."
SETTINGS = DecodeSettings(max_new_tokens=24, k=4)
# (accepted, drafted) at K=4, greedy, 24 new tokens, on PROMPT in the chat template
PINS = {
    "smollm2-135m-draft": (3, 74),
    "smollm2-135m-early-exit": (3, 74),
    "smollm2-135m-medusa": (5, 68),
    "smollm2-135m-eagle": (5, 66),
    "smollm2-135m-eagle3": (8, 54),
}


@pytest.fixture(scope="module")
def target():
    from specdec.models.loading import load_model

    try:
        return load_model("smollm2-135m-instruct", dtype="float32")
    except Exception as exc:  # offline without the cached conversion
        pytest.skip(f"smollm2-135m-instruct not available: {exc}")


@pytest.fixture(scope="module")
def prompt_ids(target):
    from training.zoo.data import chat_ids

    return chat_ids(target.tokenizer, PROMPT)


@pytest.fixture(scope="module")
def alone(target, prompt_ids):
    return generate(target, None, prompt_ids, SETTINGS).token_ids


@pytest.fixture(scope="module")
def shipped_run(target, prompt_ids):
    """Each drafter's greedy run on PROMPT, made once: the identity and the pinned acceptance read the same run."""
    runs = {}

    def run(name):
        if name not in runs:
            runs[name] = generate(target, drafter(name, target), prompt_ids, SETTINGS)
        return runs[name]

    return run


def drafter(name, target):
    from specdec.drafters.registry import load_drafter, registered

    if registered(name) is None:
        pytest.skip(f"{name}'s weights are not in assets/drafters/")
    return load_drafter(name, target)


@pytest.mark.parametrize("name", NAMES + tuple(TREES))
def test_shipped_drafter_greedy_output_is_the_target_alone(name, shipped_run, alone):
    assert shipped_run(name).token_ids == alone


@pytest.fixture(scope="module")
def bf16_target():
    from specdec.models.loading import load_model
    from specdec.runners import packed_weights

    if not (packed_weights.bf16_available() and packed_weights.cpu_has_amx_bf16()):
        pytest.skip("no AMX: auto stays float32 here, and oneDNN's bf16 products of one row and of several differ")
    try:
        return load_model("smollm2-135m-instruct", dtype="bfloat16")
    except Exception as exc:  # offline without the cached conversion
        pytest.skip(f"smollm2-135m-instruct not available: {exc}")


@pytest.mark.parametrize("name", ("prompt-lookup", "smollm2-135m-eagle", "smollm2-135m-eagle-tree-60",
                                  "smollm2-135m-eagle3", "smollm2-135m-eagle3-tree"))
def test_in_bfloat16_through_packed_weights_greedy_output_is_the_target_alone(name, bf16_target, prompt_ids):
    """What `auto` runs on a CPU with AMX: verification forwards score each token as one-token
    forwards do (tests/runners/test_packed_weights.py), so the identity holds in bf16 too."""
    alone_bf16 = generate(bf16_target, None, prompt_ids, SETTINGS).token_ids
    result = generate(bf16_target, drafter(name, bf16_target), prompt_ids, SETTINGS)
    assert result.token_ids == alone_bf16


@pytest.mark.parametrize("name", NAMES)
def test_shipped_drafter_greedy_acceptance_is_pinned(name, shipped_run):
    m = shipped_run(name).metrics
    pin = PINS[name]
    if pin is None:
        pytest.skip(f"no pin recorded for {name}")
    accepted, drafted = pin
    # float32 greedy is deterministic here; allow one token of slack for other CPUs' kernels
    assert abs(m.accepted_tokens - accepted) <= 1 and abs(m.drafted_tokens - drafted) <= 4


def test_shipped_drafters_are_registered_for_the_target_only():
    from specdec.drafters.registry import drafter_specs
    from specdec.drafters.shipped import available

    specs = {s.name: s for s in drafter_specs("smollm2-135m-instruct")}
    for name in NAMES:
        if available(name):
            assert name in specs and specs[name].targets == ("smollm2-135m-instruct",)
            assert specs[name].description
    assert not any(n in NAMES for n in (s.name for s in drafter_specs("lab-target")))


def test_shipped_weights_fit_the_budget():
    from specdec.drafters.shipped import ASSETS

    sizes = [p.stat().st_size for p in ASSETS.glob("*/model.safetensors")]
    if not sizes:
        pytest.skip("no zoo weights shipped")
    assert sum(sizes) <= 40 * 1000 * 1000
