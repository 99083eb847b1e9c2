"""``--tooltrail-report PATH``: the session's trail verdicts as a JSON or JUnit XML report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import tooltrail.pytest.session_report  # noqa: F401 - imported once, not by every inner run
import tooltrail.pytest.trail  # noqa: F401

pytest_plugins = ["pytester"]

INNER = ("-p", "no:hypothesispytest")

SAMPLE = """
import itertools
import json

import pytest
from tooltrail import Expect, Turn

def tool(tracer, name, **args):
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                  "gen_ai.tool.call.arguments": json.dumps(args)}
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        pass

def test_assertions(trail):
    tool(trail.tracer, "lookup_order", order_id="ORD-7731")
    trail.assert_called("lookup_order")
    trail.assert_not_called("issue_refund")

@pytest.mark.tooltrail(runs=3, threshold=0.6)
def test_runs(trail):
    numbers = itertools.count(1)
    def agent(user):
        tool(trail.tracer, "web_search" if next(numbers) == 2 else "lookup_order")
    trail.run_turns(agent, [Turn("Where is ORD-7731?", Expect(tool_calls_exclude=["web_search"]))])

def test_without_trail():
    pass
"""


@pytest.fixture
def sample(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makepyfile(test_sample=SAMPLE)
    return pytester


def test_json_report_has_a_row_per_test_assertions_and_one_per_run(
    sample: pytest.Pytester,
) -> None:
    sample.runpytest(*INNER, "--tooltrail-report", "out/report.json").assert_outcomes(passed=3)

    report = json.loads((sample.path / "out" / "report.json").read_text())
    assert [(row["label"], row["passed"]) for row in report["cases"]] == [
        ("test_sample.py::test_assertions", True),
        ("test_sample.py::test_runs run 1", True),
        ("test_sample.py::test_runs run 2", False),
        ("test_sample.py::test_runs run 3", True),
    ]
    assert [s["name"] for s in report["cases"][0]["scores"]] == [
        "required_tool:lookup_order",
        "forbidden_tool:issue_refund",
    ]
    trials = report["summary"]["runs"][1].pop("trials")  # runs pass, fail, pass: 2 of 3
    assert (trials["recorded"], trials["flips"], trials["flip_rate"]) == (3, 2, 1.0)
    assert trials["pass_at_k"] == {"1": 2 / 3, "2": 1.0, "3": 1.0}  # 1 - C(1,k)/C(3,k)
    assert trials["pass_hat_k"] == {"1": 2 / 3, "2": 1 / 3, "3": 0.0}  # C(2,k)/C(3,k)
    assert trials["interval"] == [pytest.approx(0.207660, abs=1e-6), pytest.approx(0.938508)]
    assert (trials["confidence"], trials["verdict"]) == (0.95, "inconclusive")  # 0.6 inside
    assert report["summary"]["runs"][1] == {
        "case_id": "test_sample.py::test_runs",
        "passed_runs": 2,
        "runs": 3,
        "threshold": 0.6,
        "passed": True,
        "repeated": True,
    }
    assert report["passed"] is True


def test_junit_report_parses_and_lists_the_failing_run(sample: pytest.Pytester) -> None:
    sample.runpytest(*INNER, "--tooltrail-report", "report.xml").assert_outcomes(passed=3)

    root = ET.parse(sample.path / "report.xml").getroot()
    cases = root.iter("testcase")
    assert [(case.get("name"), case.find("failure") is not None) for case in cases] == [
        ("test_sample.py::test_assertions", False),
        ("test_sample.py::test_runs run 1", False),
        ("test_sample.py::test_runs run 2", True),
        ("test_sample.py::test_runs run 3", False),
    ]


def test_the_report_path_is_announced_at_the_end(sample: pytest.Pytester) -> None:
    result = sample.runpytest(*INNER, "--tooltrail-report", "report.json")
    result.stdout.fnmatch_lines(["tooltrail report: 4 rows written to report.json"])


def test_an_unknown_report_extension_is_a_usage_error(sample: pytest.Pytester) -> None:
    result = sample.runpytest(*INNER, "--tooltrail-report", "report.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --tooltrail-report report.html: the file name must end in .json "
            "(JSON report) or .xml (JUnit XML)"
        ]
    )


def test_rows_survive_the_serialization_pytest_xdist_applies_to_reports(
    sample: pytest.Pytester, tmp_path: Path
) -> None:
    from _pytest.reports import TestReport

    from tooltrail.pytest.session_report import SessionReport

    recorder = sample.inline_run(*INNER)
    collector = SessionReport(tmp_path / "report.json")
    for report in recorder.getreports("pytest_runtest_logreport"):
        collector.pytest_runtest_logreport(TestReport._from_json(report._to_json()))

    assert [row.label for row in collector.rows] == [
        "test_sample.py::test_assertions",
        "test_sample.py::test_runs run 1",
        "test_sample.py::test_runs run 2",
        "test_sample.py::test_runs run 3",
    ]
