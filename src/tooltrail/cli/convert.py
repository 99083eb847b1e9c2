"""``tooltrail convert PATH... [--group trace|conversation] [--format json|table|tree]``: the
tool calls of OTLP dumps.

``--format table`` and ``tree`` print a block per trace for a person (``report.table``:
arguments and results redacted, cells cut to the terminal's width, colour on a terminal
unless ``NO_COLOR`` is set). The default, ``json``, prints one JSON object per trace (or
conversation) per line on stdout:
``{"trace_id", "tool_calls": [{"name", "args", "call_id", "status", "turn", "source",
"span_id"}], "turn_count", "output", "metadata"}``. With ``--content`` each call also has its
``"result"`` and a ``"turns"`` list gives each turn's ``{"turn", "input", "reply"}``: what the
user said, what the agent replied and what each tool returned (``null`` when the trace does not
record it), redacted (arguments too) with the configured redaction (``TOOLTRAIL_REDACT_*``),
as tool results and messages are customer data. A trace whose calls' content was not captured
(``EvalTrace.content_missing``) has ``"content_missing"`` with the reason, and one line on
stderr, ``trace ID: content not captured: REASON``, which does not change the exit code.
Records that cannot be read are reported on stderr as ``file:line: reason`` (``file@offset``
for binary files) and skipped.
Exit codes: 0 everything was read, 1 some records were skipped or log records left unjoined, or
a directory could not be listed (the rest was converted), 2 usage error (a path that names
nothing, ``-`` with standard input closed, a bad option).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click
import orjson

from tooltrail.cli.error_lines import error_line, standard_input
from tooltrail.convert import GROUPS, read_traces
from tooltrail.model import EvalTrace
from tooltrail.otlp import Diagnostic, expand_paths
from tooltrail.redact import Redaction

EXIT_OK, EXIT_SKIPPED, EXIT_USAGE = 0, 1, 2
#: ``--format``: JSON lines for programs (the default), a table or a tree for a person.
FORMATS = ("json", "table", "tree")


@click.command("convert")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@click.option(
    "--group",
    type=click.Choice(GROUPS),
    default="trace",
    show_default=True,
    help="One JSON object per trace, or per conversation (gen_ai.conversation.id, session.id).",
)
@click.option(
    "--content",
    is_flag=True,
    help="Also print each turn's input and reply and each call's result, redacted "
    "(TOOLTRAIL_REDACT_*).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="json",
    show_default=True,
    help="json: one JSON object per trace per line (for programs); table, tree: a block per "
    "trace for a person, arguments redacted, cut to the terminal's width.",
)
def convert_command(paths: Sequence[str], group: str, content: bool, fmt: str) -> None:
    """Print the tool calls of OTLP dumps (files, directories, globs, - for stdin) as JSON lines
    (or, --format table or tree, for a person)."""
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
    rules: Redaction | None = None
    if content or fmt != "json":
        from tooltrail.settings import redaction_from_env  # the redaction settings, when needed

        rules = redaction_from_env()
    diagnostics: list[Diagnostic] = []
    out = sys.stdout.buffer
    shown = 0
    traces = read_traces(list(paths), group=group, diagnostics=diagnostics, content=content)  # type: ignore[arg-type]
    # The views are written in the output stream's encoding (UTF-8 when it names none).
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    style = _view_style(rules, content, encoding) if fmt != "json" else None
    for n, trace in enumerate(traces):
        shown = _report(diagnostics, shown)
        if trace.content_missing is not None:
            click.echo(
                f"trace {trace.trace_id}: content not captured: {trace.content_missing}", err=True
            )
        if style is None:
            out.write(_dumps(trace_json(trace, rules if content else None)) + b"\n")
        else:
            from tooltrail.report.table import iter_view

            if n:
                out.write(b"\n")
            for line in iter_view([trace], fmt, style):
                out.write(line.encode(encoding, "replace"))
    out.flush()
    _report(diagnostics, shown)
    sys.exit(EXIT_SKIPPED if diagnostics else EXIT_OK)


def _view_style(rules: Redaction | None, content: bool, encoding: str) -> Any:
    """How the table and tree are drawn here: the terminal's width (100 columns when the
    output is not a terminal, or ``COLUMNS``), colour only on a terminal without ``NO_COLOR``
    (https://no-color.org) or ``TERM=dumb``, box-drawing characters where the output's encoding
    has them."""
    from tooltrail.report.table import ViewStyle

    stream = sys.stdout
    terminal = stream.isatty()
    width = shutil.get_terminal_size((100, 24)).columns
    color = terminal and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    try:
        "├└│µ".encode(encoding)
        plain = False
    except UnicodeEncodeError:
        plain = True
    return ViewStyle(
        width=width,
        color=color,
        content=content,
        ascii=plain,
        redaction=rules if rules is not None else Redaction(),
    )


def trace_json(trace: EvalTrace, content: Redaction | None = None) -> dict[str, Any]:
    """The JSON object ``tooltrail convert`` prints for one trace; with ``content`` (the
    redaction rules) also its turns' inputs and replies and its calls' results."""
    calls = []
    for call in trace.tool_calls:
        row: dict[str, Any] = {
            "name": call.name,
            "args": call.args,
            "call_id": call.call_id,
            "status": call.status,
            "turn": call.turn,
            "source": call.source,
            "span_id": call.span_id,
        }
        if content is not None:
            row["args"] = _redacted(content, call.args)
            row["result"] = _redacted(content, call.result)
        calls.append(row)
    shown: dict[str, Any] = {
        "trace_id": trace.trace_id,
        "tool_calls": calls,
        "turn_count": trace.turn_count,
        "output": trace.output,
    }
    if trace.content_missing is not None:
        shown["content_missing"] = trace.content_missing
    if content is not None:
        shown["output"] = _redacted(content, trace.output)
        shown["turns"] = [
            {
                "turn": turn.number,
                "input": _redacted(content, turn.input),
                "reply": _redacted(content, turn.reply),
            }
            for turn in trace.turns
        ]
    shown["metadata"] = trace.metadata
    return shown


def _redacted(rules: Redaction, value: Any) -> Any:
    """Free text with secret assignments and value patterns replaced, capped; a structured
    value (a tool's JSON result) with secret keys hidden and long strings cut."""
    if value is None:
        return None
    if isinstance(value, str):
        return rules.cap(rules.redact_text(value), rules.max_args_bytes)
    return rules.clean(value)[0]


def _report(diagnostics: list[Diagnostic], shown: int) -> int:
    for diagnostic in diagnostics[shown:]:
        click.echo(str(diagnostic), err=True)
    return len(diagnostics)


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # integers beyond 64 bits, odd values
        return json.dumps(value, ensure_ascii=False, default=str).encode()
