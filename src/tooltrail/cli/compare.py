"""``tooltrail compare BASE.json NEW.json``: what changed between two runs' JSON reports.

Reports of different suites, or of different traces, are still compared (a nightly run over
new traces is the usual case), with a warning saying so (``report.compare.coverage_warnings``):
on stderr, and in the text, Markdown and JSON output.
Exit codes: 0 nothing regressed beyond ``--tolerance``, 1 regressed (a newly failing row, or
a metric's pass rate fell), 2 unreadable report or bad option.
"""

from __future__ import annotations

import sys

import click
import orjson

from tooltrail.cli.error_lines import error_line, fail
from tooltrail.cli.report import write_file_or_stdout
from tooltrail.report.compare import (
    compare_reports,
    iter_comparison_markdown,
    iter_comparison_text,
)
from tooltrail.report.stream import TextSink, write_pieces
from tooltrail.results import ReportError


@click.command("compare")
@click.argument("base_path", metavar="BASE.json", type=click.Path(exists=True, dir_okay=False))
@click.argument("new_path", metavar="NEW.json", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown", "html"]),
    default="text",
    show_default=True,
    help="Output format (html: the NEW report's page with a 'changed' filter).",
)
@click.option("--out", type=click.Path(dir_okay=False), help="Write here, not stdout.")
@click.option(
    "--tolerance",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Exit 0 unless more than this fraction of rows is newly failing or a metric's pass "
    "rate fell by more than this (0: any newly failing row or any drop is a regression).",
)
def compare_command(
    base_path: str, new_path: str, fmt: str, out: str | None, tolerance: float
) -> None:
    """Compare two JSON reports (tooltrail eval --format json) of the same suite."""
    from tooltrail.report.saved import read_saved_report

    try:
        base = read_saved_report(base_path)
        new = read_saved_report(new_path)
    except ReportError as exc:
        fail("compare", str(exc))
    except OSError as exc:
        fail("compare", f"cannot read {exc.filename}: {exc.strerror or exc}")
    comparison = compare_reports(
        base.report, new.report, tolerance=tolerance, base_name=base_path, new_name=new_path
    )
    if out is not None or fmt != "text":  # the text on stdout says them itself
        for warning in comparison.warnings:
            click.echo(error_line("compare", f"warning: {warning}"), err=True)

    def write(sink: TextSink) -> None:
        if fmt == "text":
            write_pieces(iter_comparison_text(comparison), sink)
        elif fmt == "markdown":
            write_pieces(iter_comparison_markdown(comparison), sink)
        elif fmt == "json":
            sink.write(orjson.dumps(comparison.to_dict(), option=orjson.OPT_INDENT_2).decode())
            sink.write("\n")
        else:
            from tooltrail.report.html import write_html

            write_html(
                new.report,
                sink,
                trajectories=new.trajectories,
                gate=new.gate,
                comparison=comparison,
            )

    try:
        write_file_or_stdout(out, write)
    except OSError as exc:
        fail("compare", f"cannot write to {out}: {exc.strerror or exc}")
    sys.exit(1 if comparison.regressed else 0)
