"""Links that carry a configuration (specdec/ui/url_state.py): what a link holds, how it reads back, and how
every unknown or invalid parameter becomes a plain note instead of an error."""
from urllib.parse import parse_qsl

from specdec.ui.exercises import find_exercise
from specdec.ui.url_state import LinkSchema, decode_link, encode_link

import pytest

LIMITS = {"k": (1, 16), "temperature": (0, 2), "top_p": (0.05, 1.0), "top_k": (0, 200), "seed": (0, 2**32 - 1),
          "max_new_tokens": (1, 512)}
EXAMPLES = ("Explain photosynthesis in simple terms.", "A list comprehension is")
SCHEMA = LinkSchema(limits=LIMITS, examples=EXAMPLES)
PAGE = {"prompt": EXAMPLES[1], "target": "lab-target", "draft": "lab-draft-distilled", "k": 6,
        "k_schedule": "heuristic", "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 3, "max_new_tokens": 48,
        "chat": False, "target_custom": "", "draft_custom": ""}
HOT = find_exercise("hot")


def params(query: str) -> dict:
    return dict(parse_qsl(query))


def test_a_link_reads_back_as_the_settings_it_was_made_from():
    query, notes = encode_link(PAGE, None, SCHEMA)
    decoded = decode_link(params(query), SCHEMA)
    assert decoded.values == {k: v for k, v in PAGE.items() if not k.endswith("_custom")}
    assert decoded.notes == [] and notes == [] and decoded.exercise is None


def test_an_example_prompt_travels_as_its_number():
    assert params(encode_link(PAGE, None, SCHEMA)[0])["example"] == "2"


def test_an_exercises_prompt_travels_as_its_key():
    query, _ = encode_link({**PAGE, "prompt": find_exercise("rewrite").prompt}, None, SCHEMA)
    assert params(query)["example"] == "rewrite"
    assert decode_link({"example": "rewrite"}, SCHEMA).values["prompt"] == find_exercise("rewrite").prompt


def test_a_persons_own_prompt_is_never_put_in_a_link():
    query, notes = encode_link({**PAGE, "prompt": "My private essay about my employer"}, None, SCHEMA)
    assert "example" not in params(query) and "essay" not in query
    assert any("Your own prompt is not put in links" in note for note in notes)


def test_typed_model_names_are_left_out_with_a_note():
    query, notes = encode_link({**PAGE, "target": "someone/private-model", "draft_custom": "my/draft"}, None, SCHEMA)
    assert "target" not in params(query) and "private" not in query and "my%2Fdraft" not in query
    assert any("not one the app offers by name" in note for note in notes)
    assert any("typed under *Other model*" in note for note in notes)


def test_with_an_exercise_a_link_holds_only_what_differs_from_it():
    page = {"prompt": HOT.prompt, "target": HOT.target, "draft": HOT.draft, "k": 7, "k_schedule": HOT.k_schedule,
            "temperature": HOT.temperature, "top_p": HOT.top_p, "top_k": HOT.top_k, "seed": HOT.seed,
            "max_new_tokens": HOT.max_new_tokens, "chat": HOT.chat}
    assert params(encode_link(page, "hot", SCHEMA)[0]) == {"exercise": "hot", "k": "7"}


def test_a_link_with_an_exercise_names_it_and_its_overrides():
    decoded = decode_link({"exercise": "hot", "k": "7"}, SCHEMA)
    assert decoded.exercise == "hot" and decoded.values == {"k": 7} and decoded.notes == []


@pytest.mark.parametrize("param, value, words", [
    ("k", "99", "the K must be a whole number from 1 to 16"),
    ("k", "four", "the K must be a whole number from 1 to 16"),
    ("k", "2.5", "the K must be a whole number from 1 to 16"),
    ("temperature", "nan", "the temperature must be a number from 0 to 2"),
    ("top_p", "inf", "the top-p must be a number from 0.05 to 1"),
    ("seed", "-1", "the seed must be a whole number from 0 to 4.29497e+09"),
    ("chat", "maybe", "the chat format must be 1 (on) or 0 (off)"),
    ("schedule", "fastest", "the K schedule must be one of the K schedule names"),
    ("draft", "<script>", "the draft must be one of the draft names"),
])
def test_an_invalid_value_is_a_note_and_keeps_the_pages_setting(param, value, words):
    decoded = decode_link({param: value}, SCHEMA)
    assert decoded.values == {} and len(decoded.notes) == 1
    assert words in decoded.notes[0] and "kept the page's setting" in decoded.notes[0]


def test_an_unknown_parameter_is_a_note_not_an_error():
    decoded = decode_link({"colour": "red", "k": "3"}, SCHEMA)
    assert decoded.values == {"k": 3} and decoded.notes == ["`colour` is not a setting a link can carry: ignored."]


def test_an_unknown_exercise_or_example_is_a_note():
    decoded = decode_link({"exercise": "nope", "example": "9"}, SCHEMA)
    assert decoded.exercise is None and decoded.values == {}
    assert "is not an exercise of the tour" in decoded.notes[0] and "is not one of the 2 examples" in decoded.notes[1]


def test_the_projector_flag_and_the_hosts_own_parameters_are_passed_over_silently():
    decoded = decode_link({"projector": "1", "__theme": "dark", "__sign": "x"}, SCHEMA)
    assert decoded.values == {} and decoded.notes == []


def test_a_note_quotes_a_long_value_short_and_without_backticks():
    note = decode_link({"k": "`" + "9" * 100}, SCHEMA).notes[0]
    assert "'" + "9" * 39 + "…`" in note and len(note) < 160
