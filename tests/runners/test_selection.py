"""One choice of runner (specdec/runners/selection.py): the static runner for the Llama family, HF's eager runner for
the rest, the lab kernels only where asked for and fitting; and the runners on a static cache share one template."""
from specdec.errors import InvalidSettingsError
from specdec.models import memory
from specdec.runners import lab_kernels, native_kernels
from specdec.runners.backend import HFEagerRunner
from specdec.runners.lab_kernels import KIND, LabKernelRunner
from specdec.runners.selection import runner_kind, select
from specdec.runners.static import StaticCacheRunner, StaticLlamaRunner

import pytest

from tests.runners.test_lab_kernels import VOCAB, kernel_model
from tests.tiny_models import build_model, tiny_config

needs_kernels = pytest.mark.skipif(not native_kernels.available(), reason=native_kernels.unavailable_reason())


@pytest.fixture(scope="module")
def fitting():
    """A float32 Llama whose weights the lab kernels take (float16 values, kernel-sized matrices)."""
    return kernel_model("llama", seed=7)


def test_a_llama_model_gets_the_static_runner():
    assert type(select(build_model(tiny_config("llama"), seed=0), 96, 16)) is StaticLlamaRunner


def test_a_model_outside_the_llama_family_gets_the_hf_eager_runner():
    assert type(select(build_model(tiny_config("gpt2"), seed=0), 96, 16)) is HFEagerRunner


def test_the_hf_eager_backend_gives_a_llama_model_the_hf_eager_runner():
    assert type(select(build_model(tiny_config("llama"), seed=0), 96, 16, backend="hf-eager")) is HFEagerRunner


@needs_kernels
def test_the_lab_kernels_asked_for_where_they_fit_give_the_lab_kernel_runner(fitting):
    assert type(select(fitting, VOCAB, 16, kernels="lab")) is LabKernelRunner


def test_without_the_lab_kernels_asked_for_a_model_they_fit_gets_the_static_runner(fitting):
    assert type(select(fitting, VOCAB, 16)) is StaticLlamaRunner  # the default: a drafter's shared network


def test_the_lab_kernels_asked_for_where_they_do_not_fit_give_the_static_runner():
    model = build_model(tiny_config("llama"), seed=0)  # weights that are not float16 values
    assert lab_kernels.fits(model) and type(select(model, 96, 16, kernels="lab")) is StaticLlamaRunner


def test_the_lab_kernels_turned_off_give_the_static_runner(fitting, monkeypatch):
    monkeypatch.setenv("SPECDEC_LAB_KERNELS", "0")
    assert type(select(fitting, VOCAB, 16, kernels="lab")) is StaticLlamaRunner


@needs_kernels
def test_the_runner_kind_names_the_runner_select_makes(fitting):
    assert runner_kind(fitting, kernels="lab") == f"static, {KIND}"
    assert runner_kind(build_model(tiny_config("gpt2"), seed=0)) == "hf-eager"


def test_a_cache_that_would_not_fit_in_free_memory_is_refused_with_the_models_name(monkeypatch):
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1000)
    with pytest.raises(InvalidSettingsError, match="KV cache for shared-draft"):
        select(build_model(tiny_config("llama"), seed=0), 96, 4096, name="shared-draft")


@pytest.mark.parametrize("runner", [StaticLlamaRunner, LabKernelRunner])
def test_a_runner_on_a_static_cache_supplies_its_layers_and_keeps_the_templates_layout_and_head(runner):
    assert runner._layout is StaticCacheRunner._layout and runner._head is StaticCacheRunner._head
    assert runner._layers is not StaticCacheRunner._layers
