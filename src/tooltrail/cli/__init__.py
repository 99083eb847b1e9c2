"""The ``tooltrail`` command. Only this package prints; each subcommand lives in its own module.

Exit codes shared by every subcommand: 0 success, 1 failures (or some input skipped, for
``convert``), 2 usage or configuration error, 3 input records were skipped and nothing failed.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from tooltrail.cli.error_lines import fail, show_usage_error
from tooltrail.config_error import ConfigError
from tooltrail.version import __version__

#: Click's "no arguments: here is the help" is not an error to re-word (click >= 8.2).
_HELP_REQUESTS: tuple[type[BaseException], ...] = tuple(
    t for t in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if t is not None
)


#: The subcommands: name -> (module, attribute, the one line ``tooltrail --help`` shows). A
#: subcommand's module is imported when it runs, not for ``--help``: the reading, evaluating
#: and serving code behind them takes a second to import. ``tests/cli/test_cli_lazy.py`` keeps
#: these lines equal to each command's own.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "compare": (
        "tooltrail.cli.compare",
        "compare_command",
        "Compare two JSON reports (tooltrail eval --format json) of the same suite.",
    ),
    "convert": (
        "tooltrail.cli.convert",
        "convert_command",
        "Print the tool calls of OTLP dumps (files, directories, globs, - for stdin) as JSON lines "
        "(or, --format table or tree, for a person).",
    ),
    "eval": (
        "tooltrail.cli.eval",
        "eval_command",
        "Evaluate the traces in OTLP dumps (files, directories, globs, - for stdin) against SUITE.",
    ),
    "gate": (
        "tooltrail.cli.eval",
        "gate_command",
        "Check a JSON report made earlier (tooltrail eval --format json) against a gate.",
    ),
    "report": (
        "tooltrail.cli.report",
        "report_command",
        "Render a JSON report (tooltrail eval --format json) as HTML (or another format).",
    ),
    "suggest": (
        "tooltrail.cli.suggest",
        "suggest_command",
        "Write a draft suite from recorded runs: the rules every run keeps, each with a comment "
        "saying how many runs support it.",
    ),
    "serve": (
        "tooltrail.cli.serve",
        "serve_command",
        "Receive OTLP traces and logs (gRPC and HTTP), evaluate each complete trace, send the "
        "scores back.",
    ),
}


class _Commands(click.Group):
    """The ``tooltrail`` group: subcommands imported when used (``COMMANDS``), and a usage
    error of any subcommand printed with the same ``tooltrail COMMAND:`` prefix as the errors
    the commands print themselves; a configuration that cannot work (``ConfigError``, from
    any command) is caught here, once, and printed the same way (exit 2)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = COMMANDS.get(cmd_name)
        if found is None:
            return None
        command: click.Command = getattr(importlib.import_module(found[0]), found[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([(name, _shorten(text, limit)) for name, text in rows])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            if isinstance(error, _HELP_REQUESTS):
                raise
            show_usage_error(error)
            sys.exit(error.exit_code)
        except ConfigError as error:
            fail(ctx.invoked_subcommand or "", str(error))


def _shorten(text: str, limit: int) -> str:
    """``text`` cut at a word to ``limit`` characters with ``...``, as click shortens help."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 3].rsplit(" ", 1)[0]
    return cut + "..."


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the version and which reading path is in use (docs/core-path.md); the
    core is imported here, not for ``--help``."""
    if not value or ctx.resilient_parsing:
        return
    from tooltrail.convert.engine import reading_path

    click.echo(f"tooltrail, version {__version__} (reading path: {reading_path()})")
    ctx.exit()


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and the reading path in use, and exit.",
)
def main() -> None:
    """Check what an AI agent actually did, from its OpenTelemetry traces."""
