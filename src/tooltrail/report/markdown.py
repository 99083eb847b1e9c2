"""Markdown: a table per suite (rows and their failures) and a metric table, safely escaped.

``iter_markdown`` makes the document line by line; ``render_markdown`` joins the lines and
``write_markdown`` streams them to a file.
"""

from __future__ import annotations

from collections.abc import Iterator

from tooltrail.evaluate import EvaluationReport
from tooltrail.report.stream import TextSink, write_pieces

#: Each Markdown special character, backslash-escaped (one ``translate``: no regex template).
_SPECIAL = str.maketrans({char: "\\" + char for char in "\\`*_[]<>|#~"})


def escape(text: str) -> str:
    """Text safe inside a Markdown table cell: specials backslash-escaped, newlines as <br>."""
    return text.translate(_SPECIAL).replace("\r\n", "\n").replace("\n", "<br>")


def iter_markdown(report: EvaluationReport) -> Iterator[str]:
    """The Markdown report in pieces, one line (ending in a newline) each."""
    summary = report.summary
    title = report.suite_name or "tooltrail"
    if report.suite_version:
        title += f" {report.suite_version}"
    yield f"## {escape(title)}\n"
    yield "\n"
    yield (
        f"**{summary.passed_cases}/{summary.total_cases} runs passed** "
        f"(average score {summary.average_score:.2f})\n"
    )
    if summary.judge is not None:
        yield "\n" + escape(summary.judge.line()) + "\n"
    yield "\n"
    yield "| Case | Result | Failed scores |\n"
    yield "|---|---|---|\n"
    for row in report.cases:
        failed = "<br>".join(f"{escape(s.name)}: {escape(s.explanation)}" for s in row.failures)
        result = "PASS" if row.passed else "**FAIL**"
        yield f"| {escape(row.label)} | {result} | {failed} |\n"
    if summary.metrics:
        yield "\n| Metric | Passed | Total |\n|---|---:|---:|\n"
        for name, metric in summary.metrics.items():
            yield f"| {escape(name)} | {metric.passed} | {metric.total} |\n"
    repeated = [v for v in summary.runs if v.repeated]
    if repeated:
        yield "\n| Case | Passed runs | Threshold | Result |\n|---|---:|---:|---|\n"
        for v in repeated:
            threshold = "all" if v.threshold is None else f"{v.threshold:g}"
            result = "PASS" if v.passed else "**FAIL**"
            yield f"| {escape(v.case_id)} | {v.passed_runs}/{v.runs} | {threshold} | {result} |\n"


def render_markdown(report: EvaluationReport) -> str:
    """The report as GitHub-flavoured Markdown, ending in a newline."""
    return "".join(iter_markdown(report))


def write_markdown(report: EvaluationReport, out: TextSink) -> None:
    """Write the Markdown report to ``out`` as it is rendered (the same text as
    ``render_markdown``)."""
    write_pieces(iter_markdown(report), out)
