"""The text report walks its rows once, after the summary's walk: the label column's width is
counted by the summary (``Summary.longest_label``); or once in all, summarized as it is written
(``tooltrail eval``); JUnit's counts come from the summary's walk (``Summary.error_rows``).
Rows read back from disk (a batch run's ``SpilledRows``) are unpickled on every walk, so each
walk saved is a third of the report."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import overload

from tooltrail import CaseResult, EvaluationReport, Score, TestCase, TestSuite, render_text
from tooltrail.report import render_junit
from tooltrail.report.text import iter_text_summarizing
from tooltrail.results import SUMMARY_BLOCK, Summarizer, Summary

SUITE = TestSuite("s", cases=[TestCase(id="refund", required_tools=["a"])])
ROWS = [
    CaseResult(
        "refund",
        n % 2 == 0,
        [Score("required_tool:a", "required_tool", 1.0 - n % 2, n % 2 == 0, "why")],
        label=f"run-{n}" + "x" * n,
    )
    for n in range(30)
]


class WalkedRows(Sequence[CaseResult]):
    """Rows as a re-iterable sequence (as ``EvaluationReport.cases`` may be) that counts
    its walks."""

    def __init__(self, rows: list[CaseResult]) -> None:
        self.rows = rows
        self.walks = 0

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[CaseResult]:
        self.walks += 1
        return iter(self.rows)

    @overload
    def __getitem__(self, index: int) -> CaseResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[CaseResult]: ...

    def __getitem__(self, index: int | slice) -> CaseResult | list[CaseResult]:
        return self.rows[index]


def test_the_summary_and_the_text_walk_the_rows_once_each() -> None:
    rows = WalkedRows(ROWS)
    report = EvaluationReport.from_results(SUITE, rows)
    assert rows.walks == 1
    text = render_text(report)
    assert rows.walks == 2
    assert text == render_text(EvaluationReport.from_results(SUITE, list(ROWS)))
    assert report.summary.longest_label == len("run-29" + "x" * 29)
    assert text.startswith("run-0" + " " * (len("run-29" + "x" * 29) - 4) + "PASS\n")


def test_a_summary_made_elsewhere_still_gets_the_width_from_the_rows() -> None:
    counted = EvaluationReport.from_results(SUITE, list(ROWS))
    made = EvaluationReport("s", "", list(ROWS), Summary(runs=counted.summary.runs))
    assert made.summary.longest_label is None
    assert render_text(made).splitlines()[:30] == render_text(counted).splitlines()[:30]


def test_the_text_report_and_its_summary_are_made_in_one_walk() -> None:
    """What ``tooltrail eval`` does for a text report: the rows are summarized as they are
    written, in blocks (``SUMMARY_BLOCK``), and the roll-up closes the report."""
    many = [replace(row, label=f"{row.label}-{n}") for n in range(300) for row in ROWS]
    assert len(many) > 2 * SUMMARY_BLOCK  # several blocks
    rows = WalkedRows(many)
    summarizer = Summarizer({case.id: case for case in SUITE.cases})
    longest = max(len(row.label) for row in many)
    text = "".join(iter_text_summarizing(rows, summarizer, longest))
    assert rows.walks == 1
    expected = EvaluationReport.from_results(SUITE, list(many))
    assert text == render_text(expected)
    assert summarizer.summary() == expected.summary
    assert summarizer.summary().error_rows == expected.summary.error_rows == 0


def test_junit_takes_its_failure_and_error_counts_from_the_summary_walk() -> None:
    broken = CaseResult(
        "refund", False, [Score("checks", "checks", 0.0, False, "boom", error="ValueError")]
    )
    rows = WalkedRows([*ROWS, broken])
    report = EvaluationReport.from_results(SUITE, rows)
    assert (report.summary.error_rows, rows.walks) == (1, 1)
    junit = render_junit(report)
    assert rows.walks == 2  # the summary's walk, then the rows written
    assert 'tests="31" failures="15" errors="1"' in junit
    made = EvaluationReport("s", "", rows, Summary(runs=report.summary.runs))
    assert made.summary.error_rows is None  # a summary made elsewhere: the rows are counted
    assert render_junit(made).splitlines()[1] == junit.splitlines()[1]
