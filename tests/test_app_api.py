"""The app as served by `python app.py`, driven through its API with gradio_client (bundled models)."""
import pytest
from gradio_client import Client

from specdec.ui.launch import app_process
from tiny_models import build_model, save, tiny_config

GENERATE = dict(prompt="def fibonacci(n):\n", clean_whitespace=True, target="lab-target",
                draft="lab-draft-distilled", target_custom="", draft_custom="", k=4, temperature=0.7, top_p=1.0,
                top_k=0, max_new_tokens=24, seed=0)
OUTPUTS = ["status", "error", "cleanup", "tokens", "cards", "plot_acceptance", "plot_lengths", "plot_throughput",
           "plot_memory", "steps_table", "exports"]
RACE_OUTPUTS = ["cleanup", "race_base", "race_spec", "race_summary", "status", "error"]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with app_process(tmp_path_factory.mktemp("app") / "app.log", "--no-preload") as url:
        yield Client(url, verbose=False)


def generate(client, **changes) -> dict:
    return dict(zip(OUTPUTS, client.predict(**{**GENERATE, **changes}, api_name="/generate")))


def test_app_serves_on_the_requested_port_with_the_generate_endpoint(client):
    assert "/generate" in client.view_api(print_info=False, return_format="dict")["named_endpoints"]


def test_generate_with_the_bundled_pair_returns_coloured_spans_and_metrics(client):
    out = generate(client)
    assert 'class="tok tok-accepted' in out["tokens"] and "tok-prompt" in out["tokens"]
    for metric in ("acceptance", "tokens_per_forward", "tokens_per_s", "speedup", "memory"):
        assert f'data-metric="{metric}"' in out["cards"]
    assert "×" in out["cards"] and not out["error"]


def test_an_incompatible_pair_returns_the_clear_error(client, tmp_path):
    weights_only = save(build_model(tiny_config("llama"), seed=0), tmp_path / "weights-only-draft")
    out = generate(client, draft_custom=weights_only)
    assert "error-box" in out["error"] and "cannot be compared" in out["error"]


def test_an_empty_prompt_returns_the_clear_error(client):
    assert "prompt is empty" in generate(client, prompt="  ")["error"]


def test_race_returns_both_lanes_finished_with_their_tokens_per_second(client):
    out = dict(zip(RACE_OUTPUTS, client.predict(**{**GENERATE, "max_new_tokens": 16}, api_name="/race")))
    assert "(finished)" in out["race_base"] and "(finished)" in out["race_spec"] and "tok/s" in out["race_spec"]
    assert "target-only speed" in out["race_summary"] and not out["error"]
