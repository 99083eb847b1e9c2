"""``tooltrail --help`` and ``import tooltrail`` load none of the pipeline: subcommands and the
public API are imported when first used."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from fixtures import ROOT

from tooltrail.cli import COMMANDS, main

EXAMPLE = ROOT / "examples" / "refund"
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


#: What a run whose suite asks no judge and writes one report format need not load: the judge
#: tier's engine, the peers' async evaluators, the labels' agreement and the other writers.
NOT_FOR_A_PLAIN_RUN = (
    "asyncio",
    "tooltrail.judge.runner",
    "tooltrail.checks.judge_shapes",
    "tooltrail.checks.peer_protocol",
    "tooltrail.agreement",
    "tooltrail.report.junit",
    "tooltrail.report.markdown",
    "tooltrail.report.html",
)


def test_eval_without_a_judge_loads_no_judge_engine_and_one_writer() -> None:
    """``tooltrail eval`` of the README's example with the JSON report: none of
    ``NOT_FOR_A_PLAIN_RUN`` is imported (they were a fifth of its start-up)."""
    code = (
        "from click.testing import CliRunner\n"
        "from tooltrail.cli import main\n"
        f"result = CliRunner().invoke(main, ['eval', {str(EXAMPLE / 'suite.yaml')!r}, "
        f"{str(EXAMPLE)!r}, '--format', 'json'])\n"
        "assert result.exit_code in (0, 1) and '\"cases\"' in result.output, result.output\n"
        "import sys\n"
        f"print(' '.join(m for m in {NOT_FOR_A_PLAIN_RUN!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def test_the_lazy_packages_still_give_every_public_name() -> None:
    """``tooltrail.checks``, ``tooltrail.judge`` and ``tooltrail.report`` load their names on
    first use; each name of ``__all__`` is there, and ``dir`` lists it."""
    import tooltrail.checks
    import tooltrail.judge
    import tooltrail.report

    for package in (tooltrail.checks, tooltrail.judge, tooltrail.report):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
            assert name in dir(package)
    with pytest.raises(AttributeError, match="no_such_check"):
        tooltrail.checks.no_such_check  # noqa: B018
