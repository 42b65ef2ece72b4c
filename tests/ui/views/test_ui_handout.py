"""The printable handout (specdec/ui/views/handout.py): generated from the exercise data, every question with
room for a prediction, the measured figures and an answer, ready to print."""
import html
import re

from specdec.ui.exercises import EXERCISES, Exercise
from specdec.ui.views.handout import FILE_NAME, handout_html, write_handout

HANDOUT = handout_html(EXERCISES)


def test_the_handout_holds_every_exercise_in_the_tours_order():
    keys = re.findall(r'data-exercise="(\w+)"', HANDOUT)
    assert keys == [e.key for e in EXERCISES]


def test_each_exercise_shows_its_title_goal_and_what_to_predict():
    for n, exercise in enumerate(EXERCISES, start=1):
        item = HANDOUT.split(f'data-exercise="{exercise.key}"')[1].split("</li>")[0]
        assert f"{n} · {html.escape(exercise.title)}" in item and html.escape(exercise.goal) in item
        assert f"Predict: {html.escape(exercise.predict)}" in item
        assert "My prediction:" in item and "I measured:" in item and "Why:" in item


def test_the_questions_markdown_becomes_html_and_other_markup_is_escaped():
    exercise = Exercise(key="x", title="<b>t</b>", question="Press **Run** and read `k` <img src=x>",
                        explanation="", prompt="", goal="g", predict="p")
    page = handout_html([exercise])
    assert "Press <b>Run</b> and read <code>k</code> &lt;img src=x&gt;" in page
    assert "&lt;b&gt;t&lt;/b&gt;" in page and "<img" not in page


def test_the_handout_has_print_rules_and_hides_its_print_hint_on_paper():
    assert "@page" in HANDOUT and re.search(r"@media print \{ \.print-hint \{ display: none; \}", HANDOUT)


def test_the_handout_is_written_as_one_self_contained_file(tmp_path):
    path = write_handout(tmp_path, EXERCISES)
    assert path.name == FILE_NAME and path.read_text(encoding="utf-8") == HANDOUT
    assert "http" not in HANDOUT  # nothing to fetch: it prints offline


def test_the_learners_prediction_and_measurement_are_printed_on_their_lines():
    page = handout_html(EXERCISES, {"greedy": ("about 80%", "acceptance rate **84%** (accepted / drafted)")})
    item = page.split('data-exercise="greedy"')[1].split("</li>")[0]
    assert '<div class="blank" data-field="prediction"><span>My prediction:</span><i>about 80%</i>' in item
    assert "acceptance rate <b>84%</b> (accepted / drafted)" in item
    other = page.split('data-exercise="hot"')[1].split("</li>")[0]
    assert '<span>My prediction:</span><i></i>' in other  # nothing yet: a blank line to write on


def test_a_learners_words_are_escaped_on_the_handout():
    page = handout_html(EXERCISES, {"greedy": ("<script>alert(1)</script>", "")})
    assert "<script>" not in page and "&lt;script&gt;" in page
