"""Run plots are pure functions of events / RunResults / MemoryReport."""
from specdec.engine.events import DecodeSettings
from specdec.engine.theory import position_counts
from specdec.ui.views import plots

from tests.ui_fakes import MEMORY, FakeEngine, FakeModel, mixed_run


def test_position_counts_give_drafted_evaluated_and_accepted_per_draft_position():
    assert position_counts(mixed_run()) == [(0, 3, 3, 3), (1, 3, 3, 1), (2, 1, 0, 0)]


def test_acceptance_figure_has_one_bar_per_draft_position():
    fig = plots.acceptance_by_position_figure(mixed_run())
    assert list(fig.data[0].x) == [1, 2, 3] and fig.data[0].y[0] == 1.0


def test_lengths_figure_stacks_accepted_drafts_and_each_steps_own_token_in_its_fates_trace():
    fig = plots.accepted_length_figure(mixed_run())
    own = {t.name: dict(zip(t.x, t.y)) for t in fig.data[1:] if t.type == "bar"}
    assert list(fig.data[0].y) == [2, 1, 1]
    assert own == {"target's token: resampled": {1: 1, 2: 1}, "target's token: bonus": {0: 1}}


def test_throughput_figure_draws_speculative_and_baseline_with_their_rates():
    engine = FakeEngine()
    model = FakeModel("t")
    spec = engine.generate(model, FakeModel("d"), [1, 2], DecodeSettings(k=4, max_new_tokens=12))
    base = engine.generate(model, None, [1, 2], DecodeSettings(k=4, max_new_tokens=12))
    fig = plots.throughput_figure(spec, base)
    assert [t.name.split(":")[0] for t in fig.data] == ["speculative (timed)", "target-only (timed)"]
    assert fig.data[0].y[-1] == spec.metrics.new_tokens and fig.data[0].x[-1] == spec.metrics.wall_time_s


def test_memory_figure_breaks_down_weights_caches_and_rss_in_horizontal_bars():
    held = plots.memory_figure(MEMORY).data[0]
    names = list(held.y)
    assert held.orientation == "h"
    assert names == ["target weights", "draft weights", "target KV cache", "draft KV cache", "process RSS"]


def test_run_figures_returns_the_four_plots_by_output_name():
    assert set(plots.run_figures(mixed_run())) == {"plot_acceptance", "plot_lengths", "plot_throughput",
                                                   "plot_memory"}


def test_the_acceptance_figure_names_acceptance_rate_and_alpha_with_their_definitions():
    names = [t.name for t in plots.acceptance_by_position_figure(mixed_run()).data]
    assert names == ["acceptance rate (accepted / drafted)", "α (accepted / evaluated)"]


def test_the_acceptance_title_is_short_with_its_definitions_in_the_subtitle():
    title = plots.acceptance_by_position_figure(mixed_run()).layout.title
    assert title.text == "Acceptance by draft position" and "accepted / drafted" in title.subtitle.text


def test_every_run_plot_has_the_plots_one_white_background():
    figures = plots.run_figures(mixed_run(), memory=MEMORY)
    assert {name: fig.layout.template.layout.plot_bgcolor for name, fig in figures.items()} == {
        name: "white" for name in plots.RUN_PLOTS}


def test_the_memory_figure_puts_what_is_held_above_and_the_extra_memory_below_it():
    fig = plots.memory_figure(MEMORY)
    assert [(t.xaxis, t.yaxis) for t in fig.data] == [("x", "y")] + [("x2", "y2")] * 3
    assert fig.layout.yaxis2.domain[1] < fig.layout.yaxis.domain[0] and fig.layout.xaxis.type == "log"
