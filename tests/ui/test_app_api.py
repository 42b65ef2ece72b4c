"""The app as served by `python app.py`, driven through its API with gradio_client (bundled models)."""
import json

from specdec.ui.launch import app_process

import pytest
from gradio_client import Client

from tests.tiny_models import build_model, save, tiny_config

GENERATE = dict(prompt="def fibonacci(n):\n", clean=True, target="lab-target",
                draft="lab-draft-distilled", target_custom="", draft_custom="", k=4, temperature=0.7, top_p=1.0,
                top_k=0, max_new_tokens=24, seed=0)
OUTPUTS = ["status", "error", "cleanup", "tokens", "cards", "plot_acceptance", "plot_lengths", "plot_throughput",
           "plot_memory", "steps_table", "exports"]
RACE_OUTPUTS = ["cleanup", "race_base", "race_spec", "race_summary", "status", "error"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    log = tmp_path_factory.mktemp("app") / "app.log"
    with app_process(log, "--no-preload") as url:
        yield Client(url, verbose=False), log


@pytest.fixture(scope="module")
def client(served):
    return served[0]


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


def test_race_returns_both_lanes_finished_and_the_measured_verdict(client):
    out = dict(zip(RACE_OUTPUTS, client.predict(**{**GENERATE, "max_new_tokens": 16}, api_name="/race")))
    assert "(finished)" in out["race_base"] and "(finished)" in out["race_spec"] and "tok/s" in out["race_spec"]
    assert "Measured speedup:" in out["race_summary"] and not out["error"]


def endpoints(client) -> dict:
    return client.view_api(print_info=False, return_format="dict")["named_endpoints"]


@pytest.mark.parametrize("endpoint", ["/generate", "/race", "/sweep"])
def test_every_api_input_has_a_name_and_a_default(client, endpoint):
    parameters = endpoints(client)[endpoint]["parameters"]
    assert all(p["parameter_name"] and p["parameter_has_default"] for p in parameters)
    defaults = {p["parameter_name"]: p["parameter_default"] for p in parameters}
    if "draft_custom" in defaults:
        assert defaults["target_custom"] == "" and defaults["draft_custom"] == ""


@pytest.mark.parametrize("endpoint", ["/generate", "/race", "/sweep"])
def test_every_api_output_has_a_name(client, endpoint):
    labels = [r["label"] for r in endpoints(client)[endpoint]["returns"]]
    assert all(label and not label.startswith("value_") for label in labels)


def test_an_out_of_range_value_is_refused_without_a_traceback_in_the_server_log(served):
    client, log = served
    with pytest.raises(Exception, match="greater than maximum value 16"):
        client.predict(**{**GENERATE, "k": 100}, api_name="/generate")
    assert "Traceback" not in log.read_text()


def test_the_json_export_has_the_baseline_the_speedup_and_its_interval(client):
    json_path = next(p for p in generate(client)["exports"] if str(p).endswith(".json"))
    report = json.loads(open(json_path).read())
    assert report["speedup"]["ratio"] and report["speedup"]["repeats"] >= 3 and "rule" in report["speedup"]
    assert report["baseline"]["new_tokens"] == report["speedup"]["new_tokens"]
