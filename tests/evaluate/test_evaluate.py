"""Evaluation roll-up: case verdicts, metrics, repeated runs, merging, the report model."""

import json

import pytest

from tooltrail import (
    CaseResult,
    EvalSpan,
    EvalTrace,
    EvaluationReport,
    EvaluationSample,
    EvaluatorConfig,
    Registry,
    Score,
    SuiteError,
    TestCase,
    TestSuite,
    evaluate_suite,
    evaluate_trace,
)
from tooltrail.results import ReportError
from tooltrail.trials import meets


def trace_of(*tools, trace_id="t"):
    return EvalTrace(
        trace_id, spans=[EvalSpan(tool_name=t, attributes={"tool_args": {}}) for t in tools]
    )


CASE = TestCase(id="refund", required_tools=["lookup", "refund"], forbidden_tools=["search"])
SUITE = TestSuite("refund-agent", "2.1", [CASE])


def row(passed, *scores, case_id="refund", label=""):
    return CaseResult(case_id, passed, list(scores), "t", label)


def test_a_case_passes_when_every_required_score_passes():
    assert evaluate_trace(CASE, trace_of("lookup", "refund")).passed
    assert not evaluate_trace(CASE, trace_of("lookup")).passed


def test_skipped_and_optional_scores_do_not_fail_a_case():
    registry = Registry()
    registry.register(
        "skip", lambda t, c, cfg: Score("skip", "skip", 0.0, False, "n/a", skipped=True)
    )
    registry.register("soft", lambda t, c, cfg: Score("soft", "soft", 0.0, False, "meh"))
    case = TestCase(
        id="c", evaluators=[EvaluatorConfig("skip"), EvaluatorConfig("soft", required=False)]
    )
    result = evaluate_trace(case, trace_of(), registry=registry)
    assert result.passed
    assert result.failures == []


def test_evaluate_trace_labels_rows_with_the_case_id_and_keeps_the_trace_id():
    result = evaluate_trace(CASE, trace_of("lookup", trace_id="abc"))
    assert (result.case_id, result.label, result.trace_id) == ("refund", "refund", "abc")
    assert evaluate_trace(CASE, trace_of(), label="run 7").label == "run 7"


def test_metrics_roll_up_over_non_skipped_scores_with_sorted_keys():
    report = EvaluationReport.from_results(
        SUITE,
        [
            row(
                True,
                Score("b:x", "b", 1.0, True, ""),
                Score("a", "a", 0.0, False, "", skipped=True),
            ),
            row(False, Score("b:y", "b", 0.0, False, ""), Score("a", "a", 1.0, True, "")),
        ],
    )
    metrics = report.summary.metrics
    assert list(metrics) == ["a", "b"]
    assert (metrics["a"].passed, metrics["a"].total) == (1, 1)
    assert (metrics["b"].passed, metrics["b"].total) == (1, 2)
    assert report.summary.average_score == pytest.approx(2 / 3)


def test_summary_counts_rows_and_pass_rate():
    samples = [
        EvaluationSample("refund", None, trace_of("lookup", "refund"), label="ok"),
        EvaluationSample("refund", None, trace_of("lookup"), label="missing"),
        EvaluationSample("refund", None, trace_of("lookup", "refund", "search"), label="searched"),
        EvaluationSample("refund", None, trace_of("refund", "lookup"), label="reordered"),
    ]
    summary = evaluate_suite(SUITE, samples).summary
    assert (summary.passed_cases, summary.total_cases, summary.pass_rate) == (2, 4, 0.5)
    assert (summary.metrics["required_tool"].passed, summary.metrics["required_tool"].total) == (
        7,
        8,
    )


def test_rows_keep_sample_order_and_number_repeated_runs():
    samples = [EvaluationSample("refund", None, trace_of("lookup")) for _ in range(3)]
    report = evaluate_suite(SUITE, samples)
    assert [r.label for r in report.cases] == ["refund run 1", "refund run 2", "refund run 3"]


def test_a_sample_naming_an_unknown_case_is_refused_before_anything_runs():
    with pytest.raises(SuiteError, match=r"sample 1 names case 'refnd'.*did you mean 'refund'\?"):
        evaluate_suite(
            SUITE, [EvaluationSample("refund", None, trace_of()), EvaluationSample("refnd")]
        )


def test_a_sample_without_a_trace_is_judged_as_an_empty_trajectory():
    report = evaluate_suite(SUITE, [EvaluationSample("refund", "hi")])
    assert not report.cases[0].passed


def test_repeated_runs_pass_at_the_threshold_inclusive():
    case = TestCase(id="flaky", required_tools=["a"], runs=5, threshold=0.8)
    suite = TestSuite("s", cases=[case])
    traces = [trace_of("a")] * 4 + [trace_of()]
    report = evaluate_suite(suite, [EvaluationSample("flaky", None, t) for t in traces])
    (verdict,) = report.summary.runs
    assert (verdict.passed_runs, verdict.runs, verdict.passed, verdict.repeated) == (
        4,
        5,
        True,
        True,
    )
    assert report.passed
    report = evaluate_suite(suite, [EvaluationSample("flaky", None, t) for t in traces[1:]])
    assert report.summary.runs[0].runs == 5  # a missing run counts as failed
    assert not report.passed


def test_without_a_threshold_every_run_must_pass():
    report = EvaluationReport.from_results(SUITE, [row(True), row(False)])
    assert not report.passed
    assert report.summary.runs[0].repeated is False


def test_from_results_merges_rows_from_many_workers_in_the_order_given():
    a = evaluate_trace(CASE, trace_of("lookup", "refund", trace_id="a"))
    b = evaluate_trace(CASE, trace_of("lookup", trace_id="b"))
    merged = EvaluationReport.from_results(SUITE, iter([b, a]))
    assert [r.trace_id for r in merged.cases] == ["b", "a"]
    direct = evaluate_suite(
        SUITE,
        [
            EvaluationSample("refund", None, trace_of("lookup", trace_id="b")),
            EvaluationSample("refund", None, trace_of("lookup", "refund", trace_id="a")),
        ],
    )
    assert merged.summary == direct.summary
    assert (merged.suite_name, merged.suite_version) == ("refund-agent", "2.1")


def test_report_dict_round_trips_with_a_schema_version():
    report = evaluate_suite(
        SUITE, [EvaluationSample("refund", None, trace_of("lookup"), label="x")]
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["schema_version"] == 1
    assert data["suite"] == {"name": "refund-agent", "version": "2.1"}
    assert data["summary"]["metrics"]["required_tool"] == {"passed": 1, "total": 2}
    assert data["cases"][0]["scores"][1]["explanation"] == "Required tool 'refund' was not called."
    again = EvaluationReport.from_dict(data)
    assert again.cases == report.cases
    assert again.summary == report.summary


def test_an_unknown_schema_version_is_refused():
    with pytest.raises(ReportError, match="schema_version"):
        EvaluationReport.from_dict({"schema_version": 99, "cases": []})


def test_a_malformed_report_is_a_report_error():
    with pytest.raises(ReportError, match="malformed"):
        EvaluationReport.from_dict({"schema_version": 1, "cases": [{"passed": True}]})


def test_meets_compares_rates_exactly():
    assert meets(7, 10, 0.7)
    assert meets(3, 4, 0.75)
    assert not meets(2, 3, 0.67)
    assert meets(4, 5, 0.8)
    assert not meets(0, 0, 0.0)


def test_bad_input_costs_one_row_not_the_run():
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    case = TestCase(id="c", expected_tool_arguments={"t": deep})
    trace = EvalTrace("t", spans=[EvalSpan("t", {"tool_args": deep})])
    result = evaluate_trace(case, trace)
    assert not result.passed
    assert result.scores[0].error == "RecursionError"
