"""The first screen's pieces without a browser: the default draft from the model cards, the verdict sentence, the
docs links, the preset's one-line note and the collapsed details under the four primary cards."""
import json
from types import SimpleNamespace

from specdec import load_model
from specdec.measure.speedup import Estimate
from specdec.planning.choice import DrafterCosts
from specdec.models import presets
from specdec.ui.defaults import MIN_K, best_from_cards, cards_default, default_draft
from specdec.ui.links import link_docs
from specdec.ui.sidebar import models_note, pick_preset
from specdec.ui.views.cards import auto_card, render_cards
from specdec.ui.views.verdict import render_progress, render_verdict, verdict_sentence

import pytest

from tests.ui_fakes import mixed_run


def estimate(ratio, low=None, high=None, repeats=8, state="done") -> Estimate:
    return Estimate(ratio, low, high, repeats, 64, 30.0, 20.0, low, high, state)


def write_card(folder, name, by_k) -> None:
    (folder / name).mkdir()
    (folder / name / "card.json").write_text(json.dumps({"best_k_greedy_chat": by_k}))


def test_until_this_machine_is_measured_the_default_is_the_cards_best_chat_speedup_at_k_3_or_more(tmp_path):
    write_card(tmp_path, "slow", {"1": 0.9, "4": 0.8})
    write_card(tmp_path, "fast", {"1": 1.5, "2": 1.3, "4": 1.1})
    write_card(tmp_path, "not-offered", {"4": 3.0})
    best = best_from_cards(tmp_path, {"slow", "fast"})
    assert (best.name, best.k, best.speedup) == ("fast", 4, 1.1)  # K = 1 and 2 are faster there, but show little
    assert "1.10× at K = 4" in best.why() and "model cards" in best.why()


def test_the_shipped_cards_give_a_named_drafter_that_the_draft_list_offers_at_k_3_or_more():
    default = cards_default()
    assert default.name != "auto" and default.name in presets.all_model_choices() and MIN_K <= default.k <= 16


def test_the_default_measured_here_is_the_best_predicted_drafter_at_k_3_or_more_and_says_so(monkeypatch):
    from specdec.ui import defaults

    target = load_model("lab-target")
    monkeypatch.setattr(defaults, "_HERE", [])
    spec = SimpleNamespace(name="lab-draft-distilled")
    card = {"figures": {"greedy": {"chat": {"tokens_per_forward": 2.5}}}}
    costs = DrafterCosts("lab-draft-distilled", {k: 0.05 for k in range(1, 9)}, {k: 1.0 + 0.05 * k for k in range(1, 9)})
    monkeypatch.setattr("specdec.planning.auto.candidate_cards", lambda specs: {"lab-draft-distilled": card})
    monkeypatch.setattr("specdec.drafters.registry.drafter_specs", lambda name: [spec])
    monkeypatch.setattr("specdec.planning.costs.cached_costs", lambda target, name, k_max: costs)
    chosen = defaults.measure_here(target, load_drafter=lambda name: pytest.fail("measured costs were cached"))
    assert chosen.name == "lab-draft-distilled" and chosen.k >= MIN_K and chosen.source == "here"
    assert default_draft() == chosen and "on this machine" in chosen.why()


def test_the_verdict_sentence_says_faster_slower_or_no_measurable_difference():
    assert verdict_sentence(estimate(1.42, 1.37, 1.48)) == \
        "1.42× faster than the target alone — 95% interval 1.37–1.48, 8 paired runs"
    assert verdict_sentence(estimate(0.91, 0.88, 0.95)).startswith("Slower: 0.91×")
    assert verdict_sentence(estimate(1.01, 0.97, 1.04)).startswith("No measurable difference")
    assert "too few for a verdict" in verdict_sentence(estimate(1.2, repeats=2, state="stopped"))
    assert 'data-verdict="faster"' in render_verdict(estimate(1.42, 1.37, 1.48))


def test_the_progress_box_says_what_is_measured_pairs_so_far_and_why_run_waits():
    html = render_progress("", estimate(1.3, repeats=2, state="measuring"))
    assert "2 paired runs so far" in html and "64 tokens" in html and "Run waits until" in html


def test_docs_references_become_links_only_under_a_configured_base():
    text = "See docs/vllm.md and (docs/zoo.md)."
    assert link_docs(text, "") == text
    linked = link_docs(text, "https://example.org/repo/blob/main/")
    assert "[docs/vllm.md](https://example.org/repo/blob/main/docs/vllm.md)" in linked
    assert "([docs/zoo.md](https://example.org/repo/blob/main/docs/zoo.md))" in linked


def test_the_preset_note_is_one_line_and_its_details_are_apart():
    first = presets.PAIR_PRESETS[0]
    picked, note = pick_preset(first.key), models_note(first.target, default_draft().name)
    assert "\n" not in note["preset_note"] and len(note["preset_note"]) < 90
    assert note["preset_details"] == first.note
    assert picked["draft"] == default_draft().name


def test_four_primary_cards_then_memory_in_a_collapsed_details():
    from specdec.engine.theory import live_metrics

    html = render_cards(live_metrics(mixed_run()), estimate(1.42, 1.37, 1.48))
    primary, details = html.split('<details class="card-details"')
    where = [primary.find(f'data-metric="{m}"') for m in ("speedup", "tokens_per_forward", "acceptance", "tokens_per_s")]
    assert -1 not in where and where == sorted(where)
    assert 'data-metric="memory"' in details and 'data-metric="memory"' not in primary


def test_the_auto_card_names_the_chosen_drafter_and_the_k_each_step_used():
    events = mixed_run()
    card = auto_card({"drafter": "lab-draft-distilled", "why": "predicted 1.2x"}, events)
    ks = [e.k for e in events if e.k]
    assert "lab-draft-distilled" in card and f"K per step: {min(ks)}" in card
