"""Markdown: a table per suite (rows and their failures) and a metric table, safely escaped;
with labels (``tooltrail eval --labels``), the agreement of each labelled check: a table of
the figures, then per check its confusion matrix and its disagreeing runs.

``iter_markdown`` makes the document line by line; ``render_markdown`` joins the lines and
``write_markdown`` streams them to a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING

from tooltrail.report.agreement import (
    MAX_LISTED_DISAGREEMENTS,
    TITLE,
    figures,
    headline,
    kind,
    plural,
    verdict_word,
)
from tooltrail.report.stream import REMEMBERED_TEXTS, TextSink, write_pieces
from tooltrail.report.trials import by_k, figures_of
from tooltrail.results import EvaluationReport

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement

#: The Markdown special characters, each written after a backslash; the backslash first, so
#: that the backslashes put before the others are not escaped again.
_SPECIAL = "\\`*_[]<>|#~"


def escape(text: str) -> str:
    """Text safe inside a Markdown table cell: specials backslash-escaped, newlines as <br>.

    One ``str.replace`` per special the text holds: 0.6-0.8 us a cell where one
    ``str.translate`` to two-character strings took 1.8-8 us (its slow path), the largest
    part of writing a Markdown report of many rows."""
    for char in _SPECIAL:
        if char in text:
            text = text.replace(char, "\\" + char)
    return text.replace("\r\n", "\n").replace("\n", "<br>")


def iter_markdown(report: EvaluationReport, *, agreement: Agreement | None = None) -> Iterator[str]:
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
    # A run's rows repeat their scores' names and explanations (the checks spell them once, the
    # ``RowCompactor`` shares them): each distinct one is escaped once for the document, which
    # was two thirds of this writer's time. (Labels are trace ids, distinct: not remembered.)
    cell = lru_cache(maxsize=REMEMBERED_TEXTS)(escape)
    for row in report.cases:
        failed = "<br>".join(f"{cell(s.name)}: {cell(s.explanation)}" for s in row.failures)
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
        yield (
            "\n| Case | Interval | At the threshold | Flip rate | pass@k | pass^k |\n"
            "|---|---|---|---|---|---|\n"
        )
        for v in repeated:  # the runs' figures (``report.trials``)
            shown = figures_of(v)
            yield (
                f"| {escape(v.case_id)} | {escape(shown.interval)} | {escape(shown.reading)} "
                f"| {escape(shown.flip_rate)} | {by_k(shown.ks, shown.pass_at)} "
                f"| {by_k(shown.ks, shown.pass_hat)} |\n"
            )
    if agreement is not None:
        yield from _agreement(agreement)


def _agreement(agreement: Agreement) -> Iterator[str]:
    """The agreement with labels: the figures of every check, then each one's matrix and
    disagreeing runs."""
    yield f"\n### {TITLE}\n\n{escape(headline(agreement))}\n"
    if agreement.checks:
        yield (
            "\n| Check | Kind | Labelled | Accuracy | Kappa | True positive rate "
            "| True negative rate | Self-agreement | No verdict |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
        )
    for check in agreement.checks:
        shown = figures(check)
        yield (
            f"| {escape(check.check)} | {kind(check)} | {check.compared} | {shown.accuracy} "
            f"| {shown.kappa} | {shown.true_positive_rate} | {shown.true_negative_rate} "
            f"| {shown.self_agreement} | {check.no_verdict} |\n"
        )
    for check in agreement.checks:
        yield f"\n#### {escape(check.check)}\n\n"
        yield "| | check pass | check fail |\n|---|---:|---:|\n"
        yield f"| **human pass** | {check.true_positive} | {check.false_negative} |\n"
        yield f"| **human fail** | {check.false_positive} | {check.true_negative} |\n"
        if not check.disagreements:
            continue
        yield f"\n{plural(len(check.disagreements), 'disagreeing run')}:\n\n"
        yield "| Run | Trace | Human | Check | Notes | Check's explanation |\n"
        yield "|---|---|---|---|---|---|\n"
        for found in check.disagreements[:MAX_LISTED_DISAGREEMENTS]:
            yield (
                f"| {escape(found.label)} | {escape(found.trace_id or '-')} "
                f"| {verdict_word(found.human_passed)} | {verdict_word(found.check_passed)} "
                f"| {escape(found.notes)} | {escape(found.explanation)} |\n"
            )
        more = len(check.disagreements) - MAX_LISTED_DISAGREEMENTS
        if more > 0:
            yield f"\n... and {more} more (the JSON report lists them all)\n"
    if agreement.unmatched:
        yield f"\n{plural(agreement.unmatched_count, 'label')} matched no score:\n\n"
        for unmatched in agreement.unmatched:
            yield f"- {escape(unmatched.describe())}\n"


def render_markdown(report: EvaluationReport, *, agreement: Agreement | None = None) -> str:
    """The report as GitHub-flavoured Markdown, ending in a newline."""
    return "".join(iter_markdown(report, agreement=agreement))


def write_markdown(
    report: EvaluationReport, out: TextSink, *, agreement: Agreement | None = None
) -> None:
    """Write the Markdown report to ``out`` as it is rendered (the same text as
    ``render_markdown``)."""
    write_pieces(iter_markdown(report, agreement=agreement), out)
