"""Bad input through the served app's API (gradio_client, and raw HTTP for what the client cannot
send: NaN, unpaired surrogates). Every class gets one clear line: the red error box for what the
app refuses, an error to the API caller for what the inputs refuse; never a traceback in the server
log, and the app keeps serving."""
import json
import re

from specdec.ui.launch import app_process

import httpx
import pytest
from gradio_client import Client

from tests.bad_models import build_all

LIMITS = ["--max-new-tokens", "64", "--max-prompt-chars", "4000", "--max-sweep-points", "12",
          "--model-cache-gb", "0.05", "--max-repeats", "3"]
GENERATE = dict(prompt="def f(x):\n", clean=True, target="lab-target", draft="lab-draft-distilled",
                target_custom="", draft_custom="", k=4, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=8, seed=0)
OUTPUTS = ["status", "error", "cleanup", "tokens", "cards", "plot_acceptance", "plot_lengths", "plot_throughput",
           "plot_memory", "steps_table", "exports"]
SWEEP = dict(prompt="def f(x):\n", clean=True, target="lab-target", target_custom="",
             drafts=["lab-draft-distilled"], ks="1-2", temperatures="0", max_new_tokens=8, seed=0, top_p=1.0, top_k=0)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("bad-api"))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    log = tmp_path_factory.mktemp("app") / "app.log"
    with app_process(log, "--no-preload", *LIMITS) as url:
        yield Client(url, verbose=False), url, log


@pytest.fixture
def client(served):
    yield served[0]
    assert "Traceback" not in served[2].read_text()  # after every call: nothing reached the server log


def generate(client, **changes) -> dict:
    return dict(zip(OUTPUTS, client.predict(**{**GENERATE, **changes}, api_name="/generate")))


def error_box(client, **changes) -> str:
    out = generate(client, **changes)
    assert "error-box" in out["error"], out["status"]
    return out["error"]


def raw_generate(client, url: str, **json_values) -> tuple[str, str]:
    """POSTs /generate with literal JSON values (NaN, "\\ud800") that gradio_client refuses to encode,
    every parameter in the endpoint's order; returns the final SSE event and its data."""
    parameters = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/generate"]["parameters"]
    values = {p["parameter_name"]: json_values.get(p["parameter_name"]) or
              json.dumps(GENERATE.get(p["parameter_name"], p["parameter_default"])) for p in parameters}
    call = f"{url}gradio_api/call/generate"
    event_id = httpx.post(call, content='{"data": [%s]}' % ", ".join(values.values()),
                          headers={"content-type": "application/json"}).json()["event_id"]
    with httpx.stream("GET", f"{call}/{event_id}", timeout=120) as stream:
        lines = [line for line in "".join(stream.iter_text()).splitlines() if line.startswith(("event:", "data:"))]
    return lines[-2].removeprefix("event: "), lines[-1].removeprefix("data: ")


# --- non-finite and out-of-range numbers ------------------------------------------------------------------

RAW_NUMBERS = [
    ({"k": "NaN"}, "K (draft tokens per step): expected a finite number, got nan."),
    ({"temperature": "NaN"}, "Temperature (0 = greedy): expected a finite number, got nan."),
    ({"seed": "NaN"}, "Seed: expected a finite number, got nan."),
    ({"top_p": "Infinity"}, "Top-p (1 = off): expected a finite number, got inf."),
    ({"max_new_tokens": "-Infinity"}, "Max new tokens: expected a finite number, got -inf."),
]


@pytest.mark.parametrize("values, message", RAW_NUMBERS, ids=[next(iter(v)) for v, _ in RAW_NUMBERS])
def test_non_finite_numbers_are_refused_with_one_line(served, client, values, message):
    event, data = raw_generate(client, served[1], **values)
    assert event == "error" and json.loads(data)["error"] == message


def test_a_call_with_too_few_values_is_refused_with_one_line(served, client):
    call = f"{served[1]}gradio_api/call/generate"
    event_id = httpx.post(call, json={"data": ["def f():", True, "lab-target"]}).json()["event_id"]
    with httpx.stream("GET", f"{call}/{event_id}", timeout=60) as stream:
        lines = [line for line in "".join(stream.iter_text()).splitlines() if line.startswith("data:")]
    assert re.fullmatch(r"generate takes \d+ values, got 3: send them all \(see the API page\) or use gradio_client "
                        r"with named parameters\.", json.loads(lines[-1].removeprefix("data: "))["error"])


CLIENT_NUMBERS = [
    ({"k": 100}, "Value 100 is greater than maximum value 16."),
    ({"k": "abc"}, "K (draft tokens per step): expected a finite number, got 'abc'."),
    ({"k": None}, "K (draft tokens per step): expected a finite number, got None."),
    ({"top_p": 0.0}, "Value 0.0 is less than minimum value 0.05."),
    ({"seed": 1e30}, "Value 1e+30 is greater than maximum value 4294967295."),
    ({"clean": "yes"}, "expected true or false, got 'yes'."),
    ({"target": ["lab-target"]}, "Target: expected a name, got ['lab-target']."),
]


@pytest.mark.parametrize("values, message", CLIENT_NUMBERS, ids=[next(iter(v)) for v, _ in CLIENT_NUMBERS])
def test_values_outside_the_sliders_ranges_or_types_are_refused(client, values, message):
    with pytest.raises(Exception, match=re.escape(message)):
        generate(client, **values)


def test_max_new_tokens_above_the_deployment_limit_gets_the_error_box(client):
    assert "Max new tokens must be from 1 to 64 (got 200)" in error_box(client, max_new_tokens=200)


@pytest.mark.parametrize("changes, message", [
    ({"ks": "1-100000000"}, "K values must lie in [1, 16]"),
    ({"ks": "1-8", "temperatures": "0, 0.5, 1"}, "This sweep has 24 points"),
    ({"temperatures": "nan"}, "temperature values must lie in [0.0, 2.0]: got nan"),
], ids=["huge-k-range", "too-many-points", "nan-temperature"])
def test_a_sweep_beyond_the_limits_gets_the_error_box(client, changes, message):
    out = client.predict(**{**SWEEP, **changes}, api_name="/sweep")
    box = next(o for o in out if isinstance(o, str) and "error-box" in o)
    assert message in box


# --- lengths beyond the context or the memory ---------------------------------------------------------------

def test_a_prompt_longer_than_the_deployment_allows_gets_the_error_box(client):
    assert "is 5,000 characters; this deployment accepts at most 4,000" in error_box(client, prompt="x" * 5000)


def test_a_prompt_beyond_the_models_context_gets_the_error_box(client, folders):
    message = error_box(client, target_custom=folders["no_unknown_token"], draft="prompt-lookup", prompt="the cat " * 200)
    assert "The prompt is 400 tokens, but" in message and "reads at most 256: shorten the prompt" in message


def test_a_model_larger_than_the_model_memory_is_refused_before_loading(client, folders):
    message = error_box(client, target_custom=folders["large"], draft="prompt-lookup")
    assert "needs about 0.10 GB for its weights" in message and "model memory of 50.0 MB" in message


# --- weights, model kinds and tokenizers ------------------------------------------------------------------------

FOLDERS = [
    ("truncated", "weights are damaged or incomplete"),
    ("garbage", "weights are damaged or incomplete"),
    ("empty_weights", "weights are damaged or incomplete"),
    ("missing_tensor", "weights are incomplete: 1 tensor(s) missing"),
    ("wrong_shape", "weights do not match its config.json"),
    ("damaged_config", "config.json is damaged"),
    ("no_weights", "has no .safetensors weights"),
    ("encoder_only", "is an encoder-only (masked language) model"),
    ("vision", "is a vision or multimodal model"),
    ("encoder_decoder", "is an encoder-decoder (sequence-to-sequence) model"),
]


@pytest.mark.parametrize("folder, message", FOLDERS, ids=[f for f, _ in FOLDERS])
def test_a_broken_or_non_causal_model_folder_gets_the_error_box(client, folders, folder, message):
    assert message in error_box(client, target_custom=folders[folder], draft="prompt-lookup")


def test_a_tokenizer_without_an_unknown_token_gets_the_error_box(client, folders):
    message = error_box(client, target_custom=folders["no_unknown_token"], draft="prompt-lookup", prompt="the dog")
    assert "tokenizer cannot encode this prompt: WordLevel error: Missing [UNK] token" in message


def test_a_chat_template_that_refuses_the_prompt_gets_the_error_box(client, folders):
    message = error_box(client, target_custom=folders["refusing_chat_template"], draft="prompt-lookup")
    assert "cannot encode this prompt in its chat template: This model has no chat format" in message


# --- unusual Unicode -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt, shown", [
    ("🦀 emoji 🎉", "🦀 emoji 🎉"), ("مرحبا بالعالم", "مرحبا بالعالم"), ("a\x07b\x1b[31m\u202eevil", "evil"),
], ids=["emoji", "right-to-left", "control"])
def test_unusual_unicode_prompts_generate_and_show_the_prompt(client, prompt, shown):
    out = generate(client, prompt=prompt)
    assert not out["error"] and shown in out["tokens"] and 'class="tok tok-' in out["tokens"]


def test_an_unpaired_surrogate_gets_the_error_box(served, client):
    event, data = raw_generate(client, served[1], prompt='"abc\\ud800"')
    assert event == "complete" and "unpaired surrogate (U+D800 at character 4)" in json.loads(data)[1]


def test_the_app_still_serves_after_every_bad_input(client):
    out = generate(client)
    assert not out["error"] and 'class="tok tok-' in out["tokens"]
