"""The ``tooltrail`` command. Only this package prints; each subcommand lives in its own module.

Exit codes shared by every subcommand: 0 success, 1 failures (or some input skipped, for
``convert``), 2 usage or configuration error, 3 input records were skipped and nothing failed.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from tooltrail.cli.errors import show_usage_error
from tooltrail.version import __version__

#: Click's "no arguments: here is the help" is not an error to re-word (click >= 8.2).
_HELP_REQUESTS: tuple[type[BaseException], ...] = tuple(
    t for t in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if t is not None
)


class _Commands(click.Group):
    """The ``tooltrail`` group: a usage error of any subcommand is printed with the same
    ``tooltrail COMMAND:`` prefix as the errors the commands print themselves."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            if isinstance(error, _HELP_REQUESTS):
                raise
            show_usage_error(error)
            sys.exit(error.exit_code)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tooltrail")
def main() -> None:
    """Check what an AI agent actually did, from its OpenTelemetry traces."""


# Subcommands register themselves here, one line each.
from tooltrail.cli.compare import compare_command  # noqa: E402
from tooltrail.cli.convert import convert_command  # noqa: E402
from tooltrail.cli.eval import eval_command, gate_command  # noqa: E402
from tooltrail.cli.report import report_command  # noqa: E402
from tooltrail.cli.serve import serve_command  # noqa: E402

main.add_command(compare_command)
main.add_command(convert_command)
main.add_command(eval_command)
main.add_command(gate_command)
main.add_command(report_command)
main.add_command(serve_command)
