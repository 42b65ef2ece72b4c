"""Whitespace clean-up before tokenising: what it changes and what it keeps."""
from specdec.models.prompt_clean import clean_prompt


def test_runs_of_spaces_and_tabs_inside_a_line_collapse_to_one_space():
    result = clean_prompt("a  b\t\tc")
    assert result.text == "a b c" and "collapsed 2 runs" in result.summary()


def test_trailing_spaces_are_removed_and_reported_by_line():
    result = clean_prompt("x = 1  \ny = 2\t")
    assert result.text == "x = 1\ny = 2" and "lines 1, 2" in result.summary()


def test_leading_indentation_is_kept_for_code():
    assert clean_prompt("def f():\n    return  1").text == "def f():\n    return 1"


def test_newlines_are_kept():
    assert clean_prompt("a\n\n\nb").text == "a\n\n\nb"


def test_a_clean_prompt_reports_no_change():
    result = clean_prompt("The os module")
    assert not result.changed and result.summary() == "nothing to clean up"
