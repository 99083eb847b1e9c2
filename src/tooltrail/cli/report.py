"""``tooltrail report REPORT.json``: render a JSON report made earlier in another format, the
HTML page above all (its trajectories come from the JSON report's optional ``trajectory``
keys). Also the writer ``tooltrail eval`` uses for ``--format html`` and the JSON report with
trajectories. Exit codes: 0 written, 2 unreadable report or output file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import click

from tooltrail.cli.error_lines import fail
from tooltrail.report.formats import REPORT_FORMATS, RegistryError, report_writer
from tooltrail.report.stream import TextSink
from tooltrail.results import EvaluationReport, ReportError

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement
    from tooltrail.report.trajectory import Trajectory
    from tooltrail.suite.gate import GateResult


class FormatChoice(click.Choice):  # type: ignore[type-arg]
    """``--format``'s choices: the names of the report formats (``report.formats``), built in
    or installed, read when the option is parsed or shown, not when the CLI is imported (so
    ``tooltrail --help`` scans no installed package). ``leave_out`` are formats the command
    does not write."""

    def __init__(self, leave_out: Sequence[str] = ()) -> None:
        self.leave_out = tuple(leave_out)
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        try:
            names = REPORT_FORMATS.names()
        except RegistryError as exc:  # a broken plug-in: said once, as a usage error
            raise click.UsageError(str(exc)) from None
        return tuple(name for name in names if name not in self.leave_out)

    @choices.setter
    def choices(self, _: object) -> None:
        """Set by ``click.Choice.__init__``; the names are the table's."""

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> object:
        """A built-in format's name as it is (no installed package scanned), else as
        ``click.Choice`` reads it against every name."""
        if isinstance(value, str) and value not in self.leave_out:
            if REPORT_FORMATS.registered(value):
                return value
        return super().convert(value, param, ctx)


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
    """The report in ``fmt`` (a name of ``report.formats.REPORT_FORMATS``); ``html`` and
    ``json`` carry the trajectories and gate verdict; every format the agreement with labels,
    when given."""
    writer = report_writer(fmt)

    def write(sink: TextSink) -> None:
        writer(report, sink, trajectories=trajectories, gate=gate, agreement=agreement)

    write_file_or_stdout(out, write)


class _Stdout:
    def write(self, text: str, /) -> None:
        click.echo(text, nl=False)


@click.command("report")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=FormatChoice(),
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
