"""A mistyped model name is reported as unknown, with the close matches."""
from specdec.errors import ModelLoadError, OfflineError
from specdec.ui.names import close_matches, explain_unknown_names, is_unknown

import pytest

NAMES = ["lab-target", "lab-draft-distilled", "lab-draft-small", "HuggingFaceTB/SmolLM2-135M-Instruct"]


def failing(exc):
    def load(name, **kwargs):
        raise exc
    return explain_unknown_names(load)


def test_close_matches_find_the_intended_bundled_name():
    assert close_matches("lab-draft-distiled", NAMES)[0] == "lab-draft-distilled"


def test_close_matches_compare_the_model_part_of_an_organisation_id():
    assert close_matches("HuggingFaceTB/SmolLM2-135M-Instruc", NAMES) == ["HuggingFaceTB/SmolLM2-135M-Instruct"]


def test_a_name_without_organisation_that_is_not_known_or_a_folder_is_unknown(tmp_path):
    assert is_unknown("lab-traget", NAMES) and not is_unknown("lab-target", NAMES)
    assert not is_unknown(str(tmp_path), NAMES) and not is_unknown("org/model", NAMES)


def test_a_mistyped_name_says_unknown_model_with_the_close_matches_not_offline():
    load = failing(OfflineError("lab-draft-distiled is an online model that is not downloaded on this machine"))
    with pytest.raises(ModelLoadError) as raised:
        load("lab-draft-distiled")
    assert str(raised.value).startswith("Unknown model 'lab-draft-distiled'") and "lab-draft-distilled" in str(
        raised.value) and "not downloaded" not in str(raised.value)


def test_an_unknown_name_with_no_close_match_says_what_a_name_may_be():
    with pytest.raises(ModelLoadError, match="Unknown model .zzzz.: not a drafter, a preset, a folder here or a Hub id"):
        failing(OfflineError("offline"))("zzzz")


def test_an_organisation_hub_id_keeps_the_engines_message():
    with pytest.raises(OfflineError, match="not downloaded"):
        failing(OfflineError("acme/model is an online model that is not downloaded"))("acme/model")


def test_a_known_name_that_fails_keeps_the_engines_message():
    with pytest.raises(ModelLoadError, match="^disk full$"):
        failing(ModelLoadError("disk full"))("lab-target")


def test_a_successful_load_passes_through():
    assert explain_unknown_names(lambda name, **kw: name.upper())("lab-target") == "LAB-TARGET"
