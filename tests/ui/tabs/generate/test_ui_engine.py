"""The callbacks on the real engine and the bundled default pair (no server): real events render."""
from specdec.measure.speedup import Policy
from specdec.models import presets
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab

import pytest

ARGS = dict(prompt="The os module provides a portable way of using", clean_whitespace=True,
            target=presets.LAB_TARGET, draft=presets.LAB_DRAFT, target_custom="", draft_custom="",
            k=4, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=24, seed=2)


@pytest.fixture(scope="module")
def session_after_run():
    session = Session()
    updates = list(Lab(token_interval_s=0.0, policy=Policy(min_repeats=3, budget_s=1.0)).generate(session, **ARGS))
    return session, updates


def test_a_sampled_run_streams_coloured_tokens_and_ends_with_a_measured_speedup(session_after_run):
    session, updates = session_after_run
    assert any('class="tok tok-' in u.get("tokens", "") for u in updates[:-1])
    assert "95% interval" in updates[-1]["cards"] or "a 95% interval needs" in updates[-1]["cards"]
    assert session.last_run.baseline.draft_name is None
    assert session.last_run.baseline.metrics.new_tokens == session.last_run.measured.metrics.new_tokens


def test_the_inspector_explains_a_real_step(session_after_run):
    session, _ = session_after_run
    view = Lab().first_interesting_step(session)
    assert "min(1, p/q)" in view["inspect_details"] or "bonus" in view["inspect_details"]
    assert len(view["inspect_plot"].data) >= 2
