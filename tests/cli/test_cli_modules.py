"""The CLI's layout (specdec/cli/): one module per subcommand, every one named where a reader looks first, and a
bad SPECDEC_* variable reported like a bad argument."""
from pathlib import Path

import specdec.cli
from specdec.cli import main as cli

CLI = Path(specdec.cli.__file__).parent


def subcommands() -> list[str]:
    return list(cli.build_parser()._subparsers._group_actions[0].choices)


def test_every_subcommand_has_its_own_module_with_add_parser_and_run():
    assert list(cli.COMMANDS) == subcommands()
    assert all((CLI / f"{name}.py").is_file() and callable(module.add_parser) and callable(module.run)
               for name, module in cli.COMMANDS.items())


def test_the_main_modules_docstring_lists_every_subcommand():
    listed = [line.split()[0] for line in cli.__doc__.splitlines() if line.startswith("  ")]
    assert listed == subcommands()


def test_the_packages_docstring_lists_every_module():
    listed = {line.split()[0] for line in specdec.cli.__doc__.splitlines() if line.startswith("  ")}
    assert listed == {path.name for path in CLI.glob("*.py") if path.name != "__init__.py"}


def test_a_bad_variable_is_one_error_line_like_a_bad_argument(monkeypatch, capsys):
    monkeypatch.setenv("SPECDEC_DEBUG", "maybe")
    assert cli.main(["fetch", "nothing-fetchable"]) == 2
    assert capsys.readouterr().err.strip() == ("error: SPECDEC_DEBUG must be one of 1, true, yes, on, 0, false, no, "
                                               "off (got 'maybe')")
