"""``tooltrail report REPORT.json``: render a JSON report made earlier in another format, the
HTML page above all (its trajectories come from the JSON report's optional ``trajectory``
keys). Also the writer ``tooltrail eval`` uses for ``--format html`` and the JSON report with
trajectories. Exit codes: 0 written, 2 unreadable report or output file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import click

from tooltrail.cli.errors import fail
from tooltrail.evaluate import EvaluationReport, ReportError
from tooltrail.report.stream import TextSink

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement
    from tooltrail.report.trajectory import Trajectory
    from tooltrail.suite.gate import GateResult

#: Formats ``tooltrail report`` writes.
REPORT_FORMATS = ("html", "json", "junit", "markdown", "text")


def write_file_or_stdout(out: str | None, write: Callable[[TextSink], None]) -> None:
    """Call ``write`` on ``out`` (created 0600: reports quote argument values) or on stdout."""
    if out is None:
        write(_Stdout())
        return
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        write(handle)


def write_rich_report(
    report: EvaluationReport,
    fmt: str,
    out: str | None,
    *,
    trajectories: Mapping[int, Trajectory] | None = None,
    gate: GateResult | None = None,
    agreement: Agreement | None = None,
) -> None:
    """The report in ``fmt``; ``html`` and ``json`` carry the trajectories and gate verdict;
    every format the agreement with labels, when given."""
    from tooltrail.report import write_junit, write_markdown, write_text
    from tooltrail.report.html import write_html
    from tooltrail.report.json import write_json

    def write(sink: TextSink) -> None:
        if fmt == "html":
            write_html(report, sink, trajectories=trajectories, gate=gate, agreement=agreement)
        elif fmt == "json":
            write_json(report, sink, trajectories=trajectories, gate=gate, agreement=agreement)
        else:
            {"junit": write_junit, "markdown": write_markdown, "text": write_text}[fmt](
                report, sink, agreement=agreement
            )

    write_file_or_stdout(out, write)


class _Stdout:
    def write(self, text: str, /) -> None:
        click.echo(text, nl=False)


@click.command("report")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(REPORT_FORMATS),
    default="html",
    show_default=True,
    help="Output format.",
)
@click.option("--out", type=click.Path(dir_okay=False), help="Write here, not stdout.")
@click.option(
    "--gate",
    "gate_path",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="Show this gate's verdict [default: the verdict recorded in the report, if any].",
)
def report_command(report_path: str, fmt: str, out: str | None, gate_path: str | None) -> None:
    """Render a JSON report (tooltrail eval --format json) as HTML (or another format)."""
    from tooltrail.report.saved import read_saved_report

    try:
        saved = read_saved_report(report_path)
    except ReportError as exc:
        fail("report", str(exc))
    except OSError as exc:
        fail("report", f"cannot read {report_path}: {exc.strerror or exc}")
    gate = saved.gate
    if gate_path is not None:
        from tooltrail.cli.gates import load_gate
        from tooltrail.suite import SuiteError

        try:
            gate = load_gate(gate_path).check(saved.report, saved.agreement)
        except SuiteError as exc:
            fail("report", str(exc))
    try:
        write_rich_report(
            saved.report,
            fmt,
            out,
            trajectories=saved.trajectories,
            gate=gate,
            agreement=saved.agreement,
        )
    except OSError as exc:
        fail("report", f"cannot write the report to {out}: {exc.strerror or exc}")
    sys.exit(0)
