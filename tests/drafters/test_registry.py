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
                            build=lambda target, load_model=None: cls(target.real_vocab_size), title="Repeat last")]

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
