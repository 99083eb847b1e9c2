"""The text report walks its rows once, after the summary's walk: the label column's width is
counted by the summary (``Summary.longest_label``). Rows read back from disk (a batch run's
``SpilledRows``) are unpickled on every walk, so each walk saved is a third of the report."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from tooltrail import CaseResult, EvaluationReport, Score, TestCase, TestSuite, render_text
from tooltrail.evaluate import Summary

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
