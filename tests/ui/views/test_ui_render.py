"""Token rendering: every fate has its class, rejected drafts stay where they were proposed."""
import re

from specdec.ui.views.render import render_error, render_key_result, render_legend, render_step, render_tokens

from tests.ui_fakes import make_step, mixed_run


def classes_in(html: str) -> list[str]:
    return re.findall(r'class="tok (tok-[a-z]+)', html)


def test_accepted_drafts_and_bonus_token_get_their_classes():
    html = render_step(make_step(0, [(" a", True), (" b", True)], ("!", "bonus")))
    assert classes_in(html) == ["tok-accepted", "tok-accepted", "tok-bonus"]


def test_rejected_draft_is_shown_where_proposed_before_the_resampled_token():
    html = render_step(make_step(1, [(" a", True), (" b", False), (" c", None)], (" d", "resampled")))
    assert classes_in(html) == ["tok-accepted", "tok-rejected", "tok-unchecked", "tok-resampled"]


def test_unchecked_drafts_are_also_marked_rejected_for_strike_through():
    html = render_step(make_step(1, [(" a", False), (" b", None)], (" d", "resampled")))
    assert 'class="tok tok-unchecked tok-rejected"' in html


def test_target_only_steps_use_the_target_class():
    assert classes_in(render_step(make_step(0, [], ("x", "target")))) == ["tok-target"]


def test_tokens_carry_their_step_and_position_for_the_inspector():
    html = render_step(make_step(3, [(" a", True), (" b", False)], (" c", "resampled")))
    assert 'data-step="3" data-pos="d1"' in html and 'data-step="3" data-pos="final"' in html


def test_accepted_tokens_cut_by_a_stop_are_not_shown_as_output():
    step = make_step(0, [(" a", True), (" b", True)], ("!", "bonus"))
    step.emitted_ids = step.emitted_ids[:1]
    assert classes_in(render_step(step)) == ["tok-accepted"]


def test_every_step_is_preceded_by_a_visible_boundary_marker():
    html = render_tokens(mixed_run())
    assert html.count('class="step-mark"') == 3


def test_prompt_is_shown_first_and_escaped():
    html = render_tokens(mixed_run(), prompt="a < b")
    assert html.index("tok-prompt") < html.index("tok-step") and "a &lt; b" in html


def test_token_text_is_html_escaped():
    assert "&lt;script&gt;" in render_step(make_step(0, [("<script>", True)], None))


def test_newlines_are_visible_and_struck_ones_do_not_break_lines():
    html = render_step(make_step(0, [("\n", True), ("\n", False)], ("x", "resampled")))
    accepted, rejected = html.split("tok-rejected")
    assert "\n" in accepted and "↵" in rejected and "\n" not in rejected.split("</span>")[0]


def test_current_step_is_highlighted_in_step_through():
    html = render_tokens(mixed_run(), current_step=1)
    assert html.count("tok-step-current") == 1 and 'tok-step-current" data-step="1"' in html


def test_streaming_output_ends_with_a_cursor():
    assert render_tokens(mixed_run(), streaming=True).endswith('▌</span></div>')


def test_legend_shows_a_sample_of_each_fate_styled_like_the_tokens():
    legend = render_legend()
    for cls in ("tok-accepted", "tok-rejected", "tok-unchecked", "tok-resampled", "tok-bonus"):
        assert cls in legend
    assert "step-mark" in legend


def test_error_box_is_empty_without_a_message_and_escaped_with_one():
    assert render_error(None) == "" and render_error("") == ""
    assert "error-box" in render_error("x < y") and "x &lt; y" in render_error("x < y")


def test_step_marks_can_be_left_out_for_one_token_steps():
    events = [make_step(i, [], (f"t{i}", "target")) for i in range(3)]
    assert "step-mark" not in render_tokens(events, step_marks=False) and "step-mark" in render_tokens(events)


def test_a_key_result_is_boxed_and_carries_its_verdict():
    html = render_key_result("1.42× <faster>", "faster")
    assert 'class="key-result" data-verdict="faster"' in html and "&lt;faster&gt;" in html
