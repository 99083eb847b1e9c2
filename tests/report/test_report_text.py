"""The plain-text report layout."""

from tooltrail import CaseResult, EvaluationReport, Score, TestCase, TestSuite, render_text

SUITE = TestSuite("s", cases=[TestCase(id="refund", required_tools=["a"])])


def test_rows_failures_metrics_and_count():
    report = EvaluationReport.from_results(
        SUITE,
        [
            CaseResult(
                "refund",
                True,
                [Score("required_tool:a", "required_tool", 1.0, True, "ok")],
                label="good",
            ),
            CaseResult(
                "refund",
                False,
                [
                    Score(
                        "required_tool:a",
                        "required_tool",
                        0.0,
                        False,
                        "Required tool 'a' was not called.",
                    ),
                    Score("soft", "soft", 0.0, False, "not required", required=False),
                ],
                label="bad",
            ),
        ],
    )
    assert render_text(report) == (
        "good                   PASS\n"
        "bad                    FAIL\n"
        "    required_tool:a: Required tool 'a' was not called.\n"
        "\n"
        "required_tool            1/2 passed\n"
        "soft                     0/1 passed\n"
        "\n"
        "1/2 runs passed\n"
    )


def test_long_labels_widen_the_column():
    label = "a-very-long-run-label-of-thirty"
    report = EvaluationReport.from_results(SUITE, [CaseResult("refund", True, [], label=label)])
    assert render_text(report).splitlines()[0] == f"{label} PASS"


def test_repeated_cases_show_their_runs_verdict():
    suite = TestSuite(
        "s", cases=[TestCase(id="booking", required_tools=["a"], runs=3, threshold=0.5)]
    )
    report = EvaluationReport.from_results(
        suite,
        [
            CaseResult("booking", True, [], label="r1"),
            CaseResult("booking", False, [], label="r2"),
        ],
    )
    assert "booking                1/3 runs passed (threshold 0.5): FAIL\n" in render_text(report)


def test_multiline_explanations_stay_indented():
    report = EvaluationReport.from_results(
        SUITE,
        [
            CaseResult("refund", False, [Score("x", "x", 0.0, False, "line one\nline two")]),
        ],
    )
    assert "    x: line one\n        line two\n" in render_text(report)


def test_an_empty_report_says_nothing_ran():
    assert render_text(EvaluationReport.from_results(SUITE, [])) == "\n0/0 runs passed\n"
