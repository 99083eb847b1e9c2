"""``tooltrail --help`` and ``import tooltrail`` load none of the pipeline: subcommands and the
public API are imported when first used."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from tooltrail.cli import COMMANDS, main

PIPELINE = ("tooltrail.score", "tooltrail.otlp", "tooltrail.convert", "tooltrail.serve")


def _loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    modules = done.stdout.split()
    return [m for m in modules if m.startswith(PIPELINE)]


def test_help_imports_no_subcommand() -> None:
    code = (
        "from click.testing import CliRunner\n"
        "from tooltrail.cli import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0 and 'serve' in result.output, result.output"
    )
    assert _loaded_after(code) == []


def test_import_tooltrail_loads_the_api_on_first_use() -> None:
    assert _loaded_after("import tooltrail") == []
    assert "tooltrail.score" in _loaded_after("import tooltrail\ntooltrail.evaluate_trace")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_help_line_is_the_commands_own(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    assert COMMANDS[name][2] == command.get_short_help_str(limit=1000)


def test_an_unknown_command_is_a_usage_error_with_a_hint() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["evel"])
    assert result.exit_code == 2
    assert "evel" in result.output


def test_import_tooltrail_live_loads_its_pieces_on_first_use() -> None:
    """The agent's start-up pays for what it uses: ``import tooltrail.live`` loads none of the
    pipeline; ``tooltrail.live.install`` loads it."""
    assert _loaded_after("import tooltrail.live") == []
    assert "tooltrail.convert" in _loaded_after("import tooltrail.live\ntooltrail.live.install")
