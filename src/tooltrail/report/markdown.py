"""Markdown: a table per suite (rows and their failures) and a metric table, safely escaped."""

from __future__ import annotations

import re

from tooltrail.evaluate import EvaluationReport

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#~])")


def escape(text: str) -> str:
    """Text safe inside a Markdown table cell: specials backslash-escaped, newlines as <br>."""
    return _SPECIAL.sub(r"\\\1", text).replace("\r\n", "\n").replace("\n", "<br>")


def render_markdown(report: EvaluationReport) -> str:
    """The report as GitHub-flavoured Markdown, ending in a newline."""
    summary = report.summary
    title = report.suite_name or "tooltrail"
    if report.suite_version:
        title += f" {report.suite_version}"
    lines = [
        f"## {escape(title)}",
        "",
        f"**{summary.passed_cases}/{summary.total_cases} runs passed** "
        f"(average score {summary.average_score:.2f})",
        "",
        "| Case | Result | Failed scores |",
        "|---|---|---|",
    ]
    for row in report.cases:
        failed = "<br>".join(f"{escape(s.name)}: {escape(s.explanation)}" for s in row.failures)
        result = "PASS" if row.passed else "**FAIL**"
        lines.append(f"| {escape(row.label)} | {result} | {failed} |")
    if summary.metrics:
        lines += ["", "| Metric | Passed | Total |", "|---|---:|---:|"]
        for name, metric in summary.metrics.items():
            lines.append(f"| {escape(name)} | {metric.passed} | {metric.total} |")
    repeated = [v for v in summary.runs if v.repeated]
    if repeated:
        lines += ["", "| Case | Passed runs | Threshold | Result |", "|---|---:|---:|---|"]
        for v in repeated:
            threshold = "all" if v.threshold is None else f"{v.threshold:g}"
            result = "PASS" if v.passed else "**FAIL**"
            lines.append(
                f"| {escape(v.case_id)} | {v.passed_runs}/{v.runs} | {threshold} | {result} |"
            )
    return "\n".join(lines) + "\n"
