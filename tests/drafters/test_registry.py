"""Drafters are plug-ins: a family is one Drafter subclass that is its own spec, and one line in
registry.FAMILIES makes its named drafters appear wherever a drafter does (the CLI, the app, the cost model)."""
from __future__ import annotations

from specdec import DecodeSettings, generate, load_model
from specdec.drafters import registry
from specdec.drafters.base import CostShape, Drafter, DrafterSpec, Proposal
from specdec.measure import cost_model

import pytest


class RepeatLastDrafter(Drafter):
    """A toy family: proposes the last token again (one-hot q), enough to be verified like any drafter."""

    family = "repeat last"
    name = "repeat-last"
    description = "proposes the last token again"

    def propose(self, seq, k, context):
        from specdec.drafters.base import one_hot_rows

        ids = [seq[-1]] * k
        return Proposal(ids, one_hot_rows(ids, self.vocab_limit, "cpu") if ids else None)

    @classmethod
    def specs(cls):
        return [DrafterSpec(name=cls.name, drafter=cls, description=cls.description,
                            build=lambda target, load_model=None: cls(target.real_vocab_size), title="Repeat last",
                            summary="proposes the last token K times", diagram="last token ──▶ K copies",
                            note="Pays only on runs of one repeated token.")]

    @classmethod
    def cost_shape(cls, spec, meta, hidden):
        return CostShape(network=False)


@pytest.fixture
def plugged(monkeypatch):
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, RepeatLastDrafter))


def test_every_named_drafter_belongs_to_a_registered_family():
    assert all(issubclass(spec.drafter, registry.FAMILIES) for spec in registry.SPECS)


def test_a_family_added_to_the_registry_lists_its_drafters(plugged):
    assert "repeat-last" in [spec.name for spec in registry.builtin_specs()]


def test_a_plugged_in_family_drafts_and_keeps_greedy_output_exact(plugged):
    target = load_model("lab-target")
    ids = target.encode("x = 1\ny = 1\n")
    settings = DecodeSettings(k=3, max_new_tokens=12)
    drafter = registry.load_drafter("repeat-last", target)
    assert isinstance(drafter, RepeatLastDrafter)
    assert generate(target, drafter, ids, settings).token_ids == generate(target, None, ids, settings).token_ids


def test_the_cost_model_prices_a_plugged_in_family_through_its_class(plugged):
    target = cost_model.Network("t", layers=2, hidden=8, heads=1, kv_heads=1, head_dim=8, intermediate=8,
                                head_rows=16)
    shape = cost_model.draft_shape("repeat-last", target)
    assert shape.family == "repeat last" and shape.network is None


# --- the app's lists: every list a person sees names the plugged-in family's drafter -----------------------------

@pytest.fixture(scope="module")
def app_with_a_plugged_in_family():
    """The whole app, built (not served) with the toy family's one registry line added."""
    from specdec.ui.layout import build_app
    from specdec.ui.tabs.generate.callbacks import Lab

    from tests.ui_fakes import FakeEngine

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "FAMILIES", (*registry.FAMILIES, RepeatLastDrafter))
        yield build_app(Lab(FakeEngine()))


def component(app, test):
    return next(block for block in app.blocks.values() if test(block))


def dropdown_names(app, label: str) -> list[str]:
    dropdown = component(app, lambda block: (getattr(block, "label", None) or "").startswith(label)
                         and hasattr(block, "choices"))
    return [value for _, value in dropdown.choices]


def link_names(app) -> list[str]:
    from specdec.ui.url_state import LinkSchema, decode_link

    return list(decode_link({"draft": RepeatLastDrafter.name}, LinkSchema(limits={})).values.values())


def how_it_works(app) -> str:
    return component(app, lambda block: getattr(block, "elem_id", None) == "drafter-families").value


def board_name(app) -> str:
    from specdec.ui.classroom import shown_draft

    return shown_draft(RepeatLastDrafter.name)


APP_LISTS = {  # where a person sees drafter names -> what that place shows
    "the sidebar's Draft list": lambda app: dropdown_names(app, "Draft"),
    "the Sweep's drafts": lambda app: dropdown_names(app, "Drafts"),
    "a share link's draft": link_names,
    "How it works' families": how_it_works,
    "the class board's draft": board_name,
}


@pytest.mark.parametrize("place", list(APP_LISTS))
def test_a_family_added_to_the_registry_appears_in_every_list_of_the_app(app_with_a_plugged_in_family, place):
    assert RepeatLastDrafter.name in APP_LISTS[place](app_with_a_plugged_in_family)


def test_how_it_works_describes_a_plugged_in_family_from_its_spec(app_with_a_plugged_in_family):
    paragraph = how_it_works(app_with_a_plugged_in_family).split("(`repeat-last`)")[1].split("**")[0]
    assert "proposes the last token K times" in paragraph and "Pays only on runs of one repeated token." in paragraph

