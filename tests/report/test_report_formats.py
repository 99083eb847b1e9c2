"""JSON, JUnit XML and Markdown renderers."""

import json
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from tooltrail import (
    CaseResult,
    EvaluationReport,
    Score,
    TestCase,
    TestSuite,
    render_json,
    render_junit,
    render_markdown,
)
from tooltrail.report.markdown import escape

SUITE = TestSuite("refund-agent", "1.0", [TestCase(id="refund", required_tools=["a"])])
PASSING = CaseResult(
    "refund", True, [Score("required_tool:a", "required_tool", 1.0, True, "ok")], "t1", "good"
)
FAILING = CaseResult(
    "refund",
    False,
    [
        Score("required_tool:a", "required_tool", 1.0, True, "ok"),
        Score(
            "tool_arg_values:pay",
            "tool_arg_values",
            0.0,
            False,
            "Tool 'pay' was called with [{'memo': 'a|b <x> & \\x00'}], not {'memo': 'c'}.",
        ),
        Score(
            "forbidden_tool:web", "forbidden_tool", 0.0, False, "Forbidden tool 'web' was called."
        ),
    ],
    "t2",
    "bad | run",
)
BROKEN = CaseResult(
    "refund",
    False,
    [
        Score(
            "tool_call_precision",
            "tool_call_precision",
            0.0,
            False,
            "needs an allowed set",
            error="ConfigError",
        ),
    ],
    "t3",
    "misconfigured",
)
REPORT = EvaluationReport.from_results(SUITE, [PASSING, FAILING, BROKEN])


def test_json_is_the_report_model_with_a_schema_version():
    data = json.loads(render_json(REPORT))
    assert data["schema_version"] == 1
    assert data["passed"] is False
    assert data["summary"]["passed_cases"] == 1
    assert data["summary"]["total_cases"] == 3
    assert [c["label"] for c in data["cases"]] == ["good", "bad | run", "misconfigured"]
    assert data["cases"][2]["scores"][0]["error"] == "ConfigError"
    assert set(data["cases"][0]["scores"][0]) == {
        "name",
        "metric",
        "value",
        "passed",
        "explanation",
        "required",
        "skipped",
        "span_ids",
        "error",
        "turn",
    }


def test_json_writes_non_finite_values_as_null():
    nan_row = CaseResult("refund", False, [Score("x", "x", float("nan"), False, "")])
    data = json.loads(render_json(EvaluationReport.from_results(SUITE, [nan_row])))
    assert data["cases"][0]["scores"][0]["value"] is None


def test_junit_parses_with_one_testcase_per_row():
    root = ET.fromstring(render_junit(REPORT))
    (suite,) = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        "refund-agent",
        "3",
        "1",
        "1",
    )
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["good", "bad | run", "misconfigured"]
    assert cases[0].find("failure") is None


def test_junit_failures_list_the_failing_scores():
    root = ET.fromstring(render_junit(REPORT))
    failure = root.find("testsuite/testcase[@name='bad | run']/failure")
    assert failure.get("message") == "2 of 3 scores failed: tool_arg_values:pay, forbidden_tool:web"
    assert failure.text.splitlines() == [
        "tool_arg_values:pay: Tool 'pay' was called with [{'memo': 'a|b <x> & \\x00'}], "
        "not {'memo': 'c'}.",
        "forbidden_tool:web: Forbidden tool 'web' was called.",
    ]


def test_junit_reports_a_misconfigured_scorer_as_an_error():
    root = ET.fromstring(render_junit(REPORT))
    error = root.find("testsuite/testcase[@name='misconfigured']/error")
    assert error.get("type") == "ConfigError"


def test_junit_survives_control_characters_in_arguments():
    row = CaseResult(
        "refund", False, [Score("x", "x", 0.0, False, "bad \x00\x1b byte")], label="ctl\x07"
    )
    root = ET.fromstring(render_junit(EvaluationReport.from_results(SUITE, [row])))
    assert root.find("testsuite/testcase/failure").text == "x: bad \ufffd\ufffd byte"


def test_markdown_has_a_table_per_suite_and_escapes_pipes():
    text = render_markdown(REPORT)
    assert text.startswith("## refund-agent 1.0\n")
    assert "| Case | Result | Failed scores |" in text
    row = next(line for line in text.splitlines() if line.startswith("| bad"))
    assert row.startswith("| bad \\| run | **FAIL** | ")
    assert "a\\|b \\<x\\> & \\\\x00" in row  # the recorded text a|b <x> & \x00, escaped
    # every unescaped pipe is a cell border: 4 for a 3-column row
    assert row.replace("\\|", "").count("|") == 4


def markdown_cell(text: str) -> str:
    """The cell text, one character at a time: a backslash before each special, CRLF and LF
    as <br>."""
    text = text.replace("\r\n", "\n")
    return "".join("<br>" if c == "\n" else "\\" + c if c in "\\`*_[]<>|#~" else c for c in text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("\\`*_[]<>|#~\r\nab é"), max_size=30) | st.text())
def test_markdown_escapes_each_character_once(text):
    assert escape(text) == markdown_cell(text)


def test_markdown_lists_metrics():
    text = render_markdown(REPORT)
    assert "| required\\_tool | 2 | 2 |" in text
    assert "| tool\\_arg\\_values | 0 | 1 |" in text


def test_markdown_keeps_newlines_inside_the_cell():
    row = CaseResult("refund", False, [Score("x", "x", 0.0, False, "one\ntwo")], label="nl")
    text = render_markdown(EvaluationReport.from_results(SUITE, [row]))
    assert "| nl | **FAIL** | x: one<br>two |" in text
