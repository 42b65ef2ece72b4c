"""One rule decides whether a deployment is public (serving.limits.public_by_rule: the --public / --no-public flag,
else SPECDEC_PUBLIC, else SPACE_ID), and everything a visitor could type that the server acts on asks it
(serving.limits.is_public): the vLLM server URLs, model folders and Hub ids. Each way of starting the app is set up
as launch.serve sets it up (parse_options, then limits.configure with the flag's outcome), without a server;
tests/ui/test_browser_public.py checks the same in Chromium on an app started as a Space."""
from __future__ import annotations

import os

from specdec.errors import LocalPathsDisabledError, NotOfferedError
from specdec.models.presets import BUNDLED_DIR, LAB_TARGET
from specdec.serving import limits
from specdec.ui import names, sidebar
from specdec.ui.launch import parse_options
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab
from specdec.ui.vllm import engine as vllm_engine

import gradio as gr
import pytest

from tests.ui_fakes import FakeEngine

SPACE = {"SPACE_ID": "owner/specdec-lab"}
WAYS = {  # how the operator starts the app -> (flags, environment, public?)
    "on a Space": ([], SPACE, True),
    "with SPECDEC_PUBLIC=1": ([], {"SPECDEC_PUBLIC": "1"}, True),
    "with --public": (["--public"], {}, True),
    "on a Space with SPECDEC_PUBLIC=0": ([], {**SPACE, "SPECDEC_PUBLIC": "0"}, False),
    "on a Space with --no-public": (["--no-public"], SPACE, False),
}
PUBLIC_WAYS = [way for way, (_, _, public) in WAYS.items() if public]
APP_VARIABLES = ("SPACE_ID", "SPECDEC_PUBLIC", "SPECDEC_ALLOW_LOCAL_PATHS", "SPECDEC_VLLM_URL",
                 "SPECDEC_VLLM_BASELINE_URL")
TYPED_URL = "http://10.0.0.1:8000"


def start_app(monkeypatch, way: str):
    """The process as `python app.py <flags>` in that environment sets it up (launch.serve): its options, the limits
    and the deployment configured, and its Lab (here on a fake engine); restored after the test."""
    flags, env, _ = WAYS[way]
    for variable in APP_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(limits, "_current", limits.current())
    monkeypatch.setattr(limits, "_public", None)
    options = parse_options(flags, env=os.environ)
    limits.configure(options.limits, public=options.public)
    return options


@pytest.fixture(params=list(WAYS))
def deployment(request, monkeypatch):
    """(way, public?, options) for each way of starting the app."""
    return request.param, WAYS[request.param][2], start_app(monkeypatch, request.param)


def test_each_way_decides_public_by_the_one_rule(deployment):
    _, public, options = deployment
    assert limits.is_public() is public and options.public is public


def test_the_vllm_url_entry_is_hidden_and_locked_exactly_on_a_public_deployment(deployment):
    _, public, _ = deployment
    c: dict = {}
    with gr.Blocks():
        sidebar.build_sidebar(c)
    assert sidebar.engine_shown() is not public
    assert c["vllm_url"].interactive is not public and c["vllm_baseline_url"].interactive is not public


def test_a_typed_vllm_url_is_refused_exactly_on_a_public_deployment(deployment):
    _, public, _ = deployment
    session = Session()
    update = vllm_engine.choose_engine(session, vllm_engine.VLLM, TYPED_URL, "")
    if public:
        assert session.vllm is None and update["engine"] == vllm_engine.LAB and "off" in update["engine_note"]
    else:
        assert session.vllm == vllm_engine.VllmChoice(TYPED_URL, None)


def test_a_model_folder_is_refused_exactly_on_a_public_deployment(deployment):
    _, public, options = deployment
    lab = Lab(allow_local_paths=options.allow_local_paths)  # as launch.serve makes it, on the real loader
    folder = str(BUNDLED_DIR / LAB_TARGET)
    if public:
        with pytest.raises(LocalPathsDisabledError):
            lab.load(folder)
    else:
        assert lab.load(folder).source == folder  # loaded (or the same folder, loaded earlier by its name)


def test_a_typed_hub_id_is_refused_before_any_download_exactly_on_a_public_deployment(deployment):
    _, public, _ = deployment
    lab = Lab(FakeEngine())
    if public:
        with pytest.raises(NotOfferedError, match="never starts a download"):
            lab.load("someone/some-model")
        assert lab.engine.loaded == []
    else:
        lab.load("someone/some-model")
        assert lab.engine.loaded == ["someone/some-model"]


@pytest.mark.parametrize("way", PUBLIC_WAYS)
def test_a_lab_without_the_operators_setting_refuses_folders_when_public(monkeypatch, way):
    start_app(monkeypatch, way)
    with pytest.raises(LocalPathsDisabledError):
        Lab().load(str(BUNDLED_DIR / LAB_TARGET))


@pytest.mark.parametrize("way", PUBLIC_WAYS)
def test_the_operator_may_allow_folders_on_a_public_deployment(way):
    flags, env, _ = WAYS[way]
    options = parse_options(flags, env={**env, "SPECDEC_ALLOW_LOCAL_PATHS": "1"})
    assert options.public and options.allow_local_paths


@pytest.mark.parametrize("name", ["lab-draft-small", "HuggingFaceTB/SmolLM2-360M-Instruct", "someone/downloaded"])
def test_a_public_deployment_loads_the_models_it_offers_or_already_has(monkeypatch, name):
    start_app(monkeypatch, "on a Space")
    monkeypatch.setattr(names, "is_downloaded", lambda hub_id: hub_id == "someone/downloaded")
    lab = Lab(FakeEngine())
    lab.load(name)
    assert lab.engine.loaded == [name]


def test_a_refused_name_on_a_public_deployment_suggests_the_close_match(monkeypatch):
    start_app(monkeypatch, "on a Space")
    with pytest.raises(NotOfferedError, match="Did you mean lab-draft-distilled"):
        Lab(FakeEngine()).load("lab-draft-distiled")


class RecordingEngine:
    """An engine whose loader records what it was asked for."""

    def __init__(self):
        self.asked = {}

    def load_model(self, name, **kwargs):
        self.asked = kwargs
        return name


def test_a_draft_model_loads_on_its_targets_device_but_never_with_remote_code_or_a_folder_when_public(monkeypatch):
    start_app(monkeypatch, "with --public")
    lab = Lab(RecordingEngine())
    lab.load("lab-draft-tiny", device="cpu", dtype="float32", trust_remote_code=True, allow_local_paths=True)
    assert lab.engine.asked == {"device": "cpu", "dtype": "float32", "trust_remote_code": False,
                                "allow_local_paths": False}
