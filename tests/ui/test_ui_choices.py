"""The app's name lists (specdec/ui/choices.py): every drafter list comes from the drafter registry, with `auto` and
the models that can draft; tests/drafters/test_registry.py checks that a plugged-in family reaches each of them."""
from specdec.drafters import registry
from specdec.models import presets
from specdec.ui.choices import draft_choices, draft_models, offered_names
from specdec.ui.sidebar import build_sidebar
from specdec.ui.url_state import LinkSchema, decode_link

import gradio as gr
import pytest


@pytest.fixture(scope="module")
def sidebar_drafts() -> list[str]:
    c: dict = {}
    with gr.Blocks():
        build_sidebar(c)
    return [value for _, value in c["draft"].choices]


@pytest.mark.parametrize("name", ["suffix", "auto", "prompt-lookup", presets.LAB_DRAFT])
def test_the_sidebars_draft_list_holds_every_kind_of_draft(sidebar_drafts, name):
    assert name in sidebar_drafts


def test_the_sidebars_draft_list_opens_on_the_default_then_auto(sidebar_drafts):
    assert sidebar_drafts[1] == "auto" and len(sidebar_drafts) == len(set(sidebar_drafts))


def test_a_targets_draft_choices_are_its_own_named_drafters_and_the_models_that_can_draft():
    choices = draft_choices(presets.LAB_TARGET)
    assert choices[:1] == ["auto"] and {"prompt-lookup", "suffix", presets.LAB_DRAFT} <= set(choices)
    assert presets.DEFAULT_DRAFT not in choices and presets.LAB_TARGET not in choices  # trained for SmolLM2; itself


def test_every_named_drafter_for_any_target_is_a_draft_choice():
    assert {spec.name for spec in registry.drafter_specs()} <= set(draft_choices())


def test_the_models_that_can_draft_are_models_not_named_drafters():
    named = {spec.name for spec in registry.builtin_specs()}
    assert draft_models() and not named & set(draft_models())


@pytest.mark.parametrize("name", ["suffix", "auto"])
def test_a_share_link_may_name_any_listed_draft(name):
    assert decode_link({"draft": name}, LinkSchema(limits={})).values == {"draft": name}


def test_every_draft_choice_is_a_name_the_app_offers():
    assert set(draft_choices()) <= set(offered_names())
