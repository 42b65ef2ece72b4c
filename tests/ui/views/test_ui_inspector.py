"""Token inspector and step-through narration."""
from specdec.ui.views import inspector

from tests.ui_fakes import make_step, mixed_run


def test_choices_list_each_draft_then_the_target_token():
    keys = [key for _, key in inspector.position_choices(mixed_run()[1])]
    assert keys == ["d0", "d1", "d2", "final"]


def test_default_position_is_the_first_rejection():
    assert inspector.default_position(mixed_run()[1]) == "d1"


def test_default_position_is_the_final_token_when_nothing_was_rejected():
    assert inspector.default_position(mixed_run()[0]) == "final"


def test_draft_token_figure_compares_p_and_q_with_the_token_marked():
    fig = inspector.inspect_figure(mixed_run()[1], "d1")
    assert [t.name for t in fig.data] == ["p(x): target", "q(x): draft"]
    assert fig.data[0].x[0].endswith("◀")


def test_resampled_token_figure_shows_the_residual_distribution():
    fig = inspector.inspect_figure(mixed_run()[1], "final")
    assert any("residual" in t.name for t in fig.data)


def test_unknown_position_gives_an_empty_prompting_figure():
    assert len(inspector.inspect_figure(mixed_run()[0], "d9").data) == 0


def test_sampled_rejection_explains_accept_probability_and_uniform_draw():
    text = inspector.inspect_details(mixed_run()[1], "d1")
    assert "min(1, p/q) = <b>0.200</b>" in text and "u = <b>0.900</b>" in text and "rejected" in text


def test_greedy_explanation_talks_about_the_argmax():
    step = make_step(0, [(" a", False)], (" b", "resampled"), mode="greedy")
    assert "argmax" in inspector.inspect_details(step, "d0")


def test_unchecked_token_is_explained_as_discarded():
    assert "discarded unchecked" in inspector.inspect_details(mixed_run()[1], "d2")


def test_bonus_token_is_explained():
    assert "bonus" in inspector.inspect_details(mixed_run()[0], "final")


def test_step_narration_counts_drafts_and_acceptances():
    story = inspector.narrate_step(mixed_run()[1])
    assert "K = 3" in story and "accepted <b>1</b>" in story and "residual" in story


def test_token_labels_get_room_below_the_bars_and_the_legend_sits_above():
    fig = inspector.inspect_figure(mixed_run()[1], "d1")
    assert fig.layout.xaxis.automargin and fig.layout.legend.y >= 1.0 and fig.layout.xaxis.tickangle
