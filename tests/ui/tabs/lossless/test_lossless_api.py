"""The `lossless` endpoint of the app as served by `python app.py`, through gradio_client: the check passes with
the real verifier and fails with every broken one (bundled lab pair, prompt lookup, two tokens per draw), and on
the default pair (SmolLM2-135M-Instruct + prompt lookup, skipped when it is not in the fetch cache) at T = 1 with
20,000 draws: p >= 0.001 with the real verifier, p < 1e-6 with the default broken one."""
from specdec.exactness.verifier_faults import ALWAYS_ACCEPT, BROKEN_DEFAULT, CHOICES, REAL
from specdec.models import fetch, presets
from specdec.ui.launch import app_process
from specdec.ui.layout import EXAMPLES

import pytest
from gradio_client import Client

OUTPUTS = ["cleanup", "greedy", "verdict", "plot", "result", "status", "error"]
# prompt lookup drafts " sys" then "\n" after this prompt (the earlier "import" was followed by them)
LAB = dict(prompt="import os\nimport sys\nimport", clean=False, target="lab-target", draft="prompt-lookup",
           target_custom="", draft_custom="", k=4, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=16, seed=0,
           k_schedule="constant", chat=False, draws=5_000, tokens=2)
DEFAULT_PAIR = dict(LAB, prompt=EXAMPLES[0][0], target=presets.DEFAULT_TARGET, draft=presets.DEFAULT_DRAFT, chat=True,
                    draws=20_000, tokens=1)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with app_process(tmp_path_factory.mktemp("app") / "app.log", "--no-preload") as url:
        yield Client(url, verbose=False)


def lossless(client, params: dict, verifier: str) -> dict:
    return dict(zip(OUTPUTS, client.predict(**params, verifier=verifier, api_name="/lossless")))


def test_the_real_verifier_passes_through_the_api(client):
    out = lossless(client, LAB, REAL)
    sampling = out["result"]["sampling"]
    assert sampling["passed"] and sampling["p_value"] >= 1e-3 and sampling["draws"] == LAB["draws"]
    assert out["result"]["greedy"]["identical"] and not out["error"]


@pytest.mark.parametrize("broken", [name for name in CHOICES if name != REAL])
def test_every_broken_verifier_fails_through_the_api(client, broken):
    sampling = lossless(client, LAB, broken)["result"]["sampling"]
    assert not sampling["passed"] and sampling["p_value"] < 1e-3 and sampling["verifier"] == broken


def test_always_accept_breaks_the_greedy_check_too_and_the_panel_says_so(client):
    """lab-draft-tiny's greedy drafts part from the target's within 16 tokens: an always-accepting verifier keeps them."""
    out = lossless(client, dict(LAB, draft="lab-draft-tiny", draws=100, tokens=1), ALWAYS_ACCEPT)
    greedy = out["result"]["greedy"]
    assert not greedy["identical"] and greedy["verifier"] == ALWAYS_ACCEPT and greedy["rule"].startswith("Greedy, too")
    assert 'data-verdict="different"' in out["greedy"] and "guarantees" not in out["greedy"]


def test_the_endpoint_names_every_input_and_output(client):
    endpoint = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/lossless"]
    assert all(p["parameter_name"] and p["parameter_has_default"] for p in endpoint["parameters"])
    assert all(r["label"] and not r["label"].startswith("value_") for r in endpoint["returns"])


@pytest.fixture(scope="module")
def default_pair(client):
    if fetch.cached_folder(presets.DEFAULT_TARGET) is None:
        pytest.skip(f"{presets.DEFAULT_TARGET} is not in the fetch cache")
    return client


def test_the_default_pair_passes_with_the_real_verifier(default_pair):
    sampling = lossless(default_pair, DEFAULT_PAIR, REAL)["result"]["sampling"]
    assert sampling["p_value"] >= 1e-3 and sampling["draws"] == 20_000 and sampling["temperature"] == 1.0


def test_the_default_pair_fails_with_the_default_broken_verifier(default_pair):
    assert lossless(default_pair, DEFAULT_PAIR, BROKEN_DEFAULT)["result"]["sampling"]["p_value"] < 1e-6
