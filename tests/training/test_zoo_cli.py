"""`python -m training zoo`'s options (training/zoo/cli.py)."""
import argparse

from training.zoo.cli import command_line, profile_of
from training.zoo.pipeline import PROFILES


def zoo_args(**overrides) -> argparse.Namespace:
    args = dict(stage="train", profile="eagle3-asked-more", seed=0, out=None, work=None, only=None, epochs=None)
    return argparse.Namespace(**{**args, **overrides})


def test_without_epochs_the_profile_is_the_named_one():
    assert profile_of(zoo_args()) is PROFILES["eagle3-asked-more"]


def test_epochs_replace_every_recipes_epochs():
    profile = profile_of(zoo_args(epochs=6))
    assert {profile.eagle.epochs, profile.eagle3.epochs, profile.medusa.epochs, profile.early.epochs,
            profile.draft.epochs} == {6}
    assert profile.eagle3.lr == PROFILES["eagle3-asked-more"].eagle3.lr


def test_the_recorded_command_names_the_epochs():
    assert command_line(zoo_args(epochs=6)).endswith("--epochs 6")
