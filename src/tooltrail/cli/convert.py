"""``tooltrail convert PATH... [--group trace|conversation]``: the tool calls of OTLP dumps.

Prints one JSON object per trace (or conversation) per line on stdout:
``{"trace_id", "tool_calls": [{"name", "args", "call_id", "status", "turn", "source",
"span_id"}], "turn_count", "output", "metadata"}``. Records that cannot be read are reported
on stderr as ``file:line: reason`` (``file@offset`` for binary files) and skipped.
Exit codes: 0 everything was read, 1 some records were skipped or log records left unjoined, or
a directory could not be listed (the rest was converted), 2 usage error (a path that names
nothing, ``-`` with standard input closed, a bad option).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click
import orjson

from tooltrail.cli.errors import error_line, standard_input
from tooltrail.convert import GROUPS, read_traces
from tooltrail.model import EvalTrace
from tooltrail.otlp import Diagnostic, expand_paths

EXIT_OK, EXIT_SKIPPED, EXIT_USAGE = 0, 1, 2


@click.command("convert")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@click.option(
    "--group",
    type=click.Choice(GROUPS),
    default="trace",
    show_default=True,
    help="One JSON object per trace, or per conversation (gen_ai.conversation.id, session.id).",
)
def convert_command(paths: Sequence[str], group: str) -> None:
    """Print the tool calls of OTLP dumps (files, directories, globs, - for stdin) as JSON lines."""
    missing: list[Diagnostic] = []
    # Directories that cannot be listed are reported (and skipped) by the read below.
    for _ in expand_paths([p for p in paths if p != "-"], missing, unreadable=[]):
        pass
    if missing:
        for diagnostic in missing:
            click.echo(error_line("convert", str(diagnostic)), err=True)
        sys.exit(EXIT_USAGE)
    if "-" in paths:
        standard_input("convert")  # a closed stdin is a usage error, before anything is read
    diagnostics: list[Diagnostic] = []
    out = sys.stdout.buffer
    shown = 0
    for trace in read_traces(list(paths), group=group, diagnostics=diagnostics):  # type: ignore[arg-type]
        shown = _report(diagnostics, shown)
        out.write(_dumps(trace_json(trace)) + b"\n")
    out.flush()
    _report(diagnostics, shown)
    sys.exit(EXIT_SKIPPED if diagnostics else EXIT_OK)


def trace_json(trace: EvalTrace) -> dict[str, Any]:
    """The JSON object ``tooltrail convert`` prints for one trace."""
    return {
        "trace_id": trace.trace_id,
        "tool_calls": [
            {
                "name": call.name,
                "args": call.args,
                "call_id": call.call_id,
                "status": call.status,
                "turn": call.turn,
                "source": call.source,
                "span_id": call.span_id,
            }
            for call in trace.tool_calls
        ],
        "turn_count": trace.turn_count,
        "output": trace.output,
        "metadata": trace.metadata,
    }


def _report(diagnostics: list[Diagnostic], shown: int) -> int:
    for diagnostic in diagnostics[shown:]:
        click.echo(str(diagnostic), err=True)
    return len(diagnostics)


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # integers beyond 64 bits, odd values
        return json.dumps(value, ensure_ascii=False, default=str).encode()
