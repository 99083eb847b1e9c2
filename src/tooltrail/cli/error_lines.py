"""How every ``tooltrail`` command reports an error: one line ``tooltrail COMMAND: what``.

Usage and configuration errors exit 2. Click's own usage errors (a missing argument, an
unknown option) get the same prefix through ``show_usage_error``.
"""

from __future__ import annotations

import sys
from typing import BinaryIO, NoReturn

import click

EXIT_USAGE = 2


def error_line(command: str, message: str) -> str:
    """``tooltrail eval: message``; ``command`` is empty for the ``tooltrail`` group itself."""
    return f"tooltrail {command}: {message}" if command else f"tooltrail: {message}"


def fail(command: str, message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print ``message`` as ``command``'s error on stderr and exit with ``code``."""
    click.echo(error_line(command, message), err=True)
    sys.exit(code)


def standard_input(command: str) -> BinaryIO:
    """stdin's bytes, for ``-``; a closed stdin (``<&-``: Python then has no ``sys.stdin``)
    is a usage error, not a traceback."""
    stream = sys.stdin
    if stream is None:
        fail(command, "standard input is closed: '-' has nothing to read")
    return stream.buffer


def show_usage_error(error: click.UsageError) -> None:
    """Click's usage text, then the error with the prefix of the command it concerns."""
    ctx = error.ctx
    command = ""
    if ctx is not None:
        click.echo(ctx.get_usage(), err=True)
        if ctx.command.get_help_option(ctx) is not None:
            click.echo(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.", err=True)
        click.echo("", err=True)
        command = (ctx.info_name or "") if ctx.parent is not None else ""
    click.echo(error_line(command, error.format_message()), err=True)
