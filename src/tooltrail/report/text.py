"""The plain-text report: one line per row, its failures indented, the metric table, the count.

This is the format of the seed example (``examples/refund_trajectory.py``); reports diff cleanly
against agentic-evals output. ``iter_text`` makes it piece by piece; ``render_text`` joins the
pieces and ``write_text`` streams them to a file (memory: one chunk, whatever the row count).
The rows come before the roll-up, so ``tooltrail eval`` writes its text report and counts its
summary in one walk over the rows (``write_text_summarizing``), not one walk each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING

from tooltrail.report.agreement import text_lines
from tooltrail.report.stream import TextSink, write_pieces
from tooltrail.report.trials import text_lines as trial_lines
from tooltrail.results import (
    SUMMARY_BLOCK,
    CaseResult,
    EvaluationReport,
    RunVerdict,
    Summarizer,
    Summary,
)

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement

LABEL_WIDTH = 22
METRIC_WIDTH = 24


def iter_text(report: EvaluationReport, *, agreement: Agreement | None = None) -> Iterator[str]:
    """The text report in pieces (each ends in a newline): a row with its failures, then the
    metric lines, the runs lines, the agreement with labels (when given) and the count."""
    longest = report.summary.longest_label  # counted by the summary's walk over the rows
    if longest is None:
        longest = max((len(row.label) for row in report.cases), default=0)
    label_width = max(LABEL_WIDTH, longest)
    yield from _row_pieces(report.cases, label_width)
    yield from _tail(report.summary, label_width, agreement)


def iter_text_summarizing(
    rows: Iterable[CaseResult],
    summarizer: Summarizer,
    longest_label: int,
    agreement: Agreement | None = None,
) -> Iterator[str]:
    """``iter_text`` of the report of ``rows`` in one walk over them: each block of rows is
    added to ``summarizer`` as it is written, and the roll-up at the end is that summary's
    (rows read back from disk cost a walk each: ``batch.spill``). ``longest_label``: the
    length of the longest label among ``rows``, known beforehand (the label column comes
    first; ``BatchResult.longest_label()``)."""
    label_width = max(LABEL_WIDTH, longest_label)
    walk = iter(rows)
    while block := list(islice(walk, SUMMARY_BLOCK)):
        summarizer.add(block)
        yield from _row_pieces(block, label_width)
    yield from _tail(summarizer.summary(), label_width, agreement)


def _row_pieces(rows: Iterable[CaseResult], label_width: int) -> Iterator[str]:
    """One piece per row: its label and verdict, then its failures indented."""
    for row in rows:
        piece = f"{row.label:<{label_width}} {'PASS' if row.passed else 'FAIL'}\n"
        for score in row.failures:
            explanation = score.explanation.replace("\n", "\n        ")
            piece += f"    {score.name}: {explanation}\n"
        yield piece


def _tail(summary: Summary, label_width: int, agreement: Agreement | None) -> Iterator[str]:
    """What follows the rows: the metric lines, the runs lines, the judge's line, the
    agreement with labels, the count (last, so a script may read the last line)."""
    metrics = summary.metrics
    if metrics:
        yield "\n"
        metric_width = max([METRIC_WIDTH] + [len(name) for name in metrics])
        for name, metric in metrics.items():
            yield f"{name:<{metric_width}} {metric.passed}/{metric.total} passed\n"
    repeated = [verdict for verdict in summary.runs if verdict.repeated]
    if repeated:
        yield "\n"
        for verdict in repeated:  # the runs verdict, then its figures (``report.trials``)
            yield run_line(verdict, label_width) + "\n"
            yield "".join(line + "\n" for line in trial_lines(verdict))
    if summary.judge is not None:
        yield "\n" + summary.judge.line() + "\n"
    if agreement is not None:
        yield "\n"
        yield from text_lines(agreement)
    yield f"\n{summary.passed_cases}/{summary.total_cases} runs passed\n"


def render_text(report: EvaluationReport, *, agreement: Agreement | None = None) -> str:
    """The report as text, ending in a newline."""
    return "".join(iter_text(report, agreement=agreement))


def write_text(
    report: EvaluationReport, out: TextSink, *, agreement: Agreement | None = None
) -> None:
    """Write the text report to ``out`` as it is rendered (the same text as ``render_text``)."""
    write_pieces(iter_text(report, agreement=agreement), out)


def write_text_summarizing(
    rows: Iterable[CaseResult],
    summarizer: Summarizer,
    longest_label: int,
    out: TextSink,
    *,
    agreement: Agreement | None = None,
) -> None:
    """Write ``iter_text_summarizing`` to ``out`` as it is rendered."""
    write_pieces(iter_text_summarizing(rows, summarizer, longest_label, agreement), out)


def run_line(verdict: RunVerdict, width: int = LABEL_WIDTH) -> str:
    """``booking   1/3 runs passed (threshold 0.8): FAIL``."""
    rule = (
        "every run must pass" if verdict.threshold is None else f"threshold {verdict.threshold:g}"
    )
    outcome = "PASS" if verdict.passed else "FAIL"
    counts = f"{verdict.passed_runs}/{verdict.runs}"
    return f"{verdict.case_id:<{width}} {counts} runs passed ({rule}): {outcome}"
