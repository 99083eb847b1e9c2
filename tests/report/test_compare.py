"""``tooltrail compare BASE.json NEW.json``: rows that changed, metric deltas, the exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import REFUND_DUMP, REFUND_SUITE
from refund_variants import refund_variant
from test_report_html import parse

from tooltrail.checks.score import Score
from tooltrail.cli import main
from tooltrail.report.compare import NEWLY_FAILING, STILL_FAILING, compare_reports
from tooltrail.results import CaseResult, EvaluationReport

GOOD_REFUND = {"order_id": "ORD-7731", "amount": 49.99}


def json_report(tmp_path: Path, dump: Path, name: str) -> Path:
    out = tmp_path / name
    args = ["eval", str(REFUND_SUITE), str(dump), "--format", "json", "--out", str(out), "-q"]
    result = CliRunner().invoke(main, [*args, "--workers", "1", "--trajectories"])
    assert result.exit_code in (0, 1), result.output
    return out


@pytest.fixture()
def reports(tmp_path: Path) -> dict[str, Path]:
    """base: the example as recorded (wrong-amount fails); fixed: wrong-amount sends 49.99;
    regressed: the correct run sends 500."""
    fixed = refund_variant(
        tmp_path / "fixed.jsonl", arguments={("wrong-amount", "issue_refund"): GOOD_REFUND}
    )
    regressed = refund_variant(
        tmp_path / "regressed.jsonl",
        arguments={("correct", "issue_refund"): {"order_id": "ORD-7731", "amount": 500}},
    )
    return {
        "base": json_report(tmp_path, REFUND_DUMP, "base.json"),
        "fixed": json_report(tmp_path, fixed, "fixed.json"),
        "regressed": json_report(tmp_path, regressed, "regressed.json"),
    }


def compare(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


def test_a_fixed_run_is_newly_passing_and_exits_0(reports):
    result = compare(str(reports["base"]), str(reports["fixed"]))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "\nnewly passing (1)\n    wrong-amount [refund]\n" in text
    assert "newly failing" not in text
    assert "\nstill failing (2)\n    skipped-verification [refund]\n" in text
    assert "    looping [refund]\n" in text
    assert "tool_arg_values               3/4 75.0%     4/4 100.0%   +25.0\n" in text
    assert text.endswith("\nno regression (tolerance 0)\n")


def test_a_regressed_run_is_newly_failing_and_exits_1(reports):
    result = compare(str(reports["base"]), str(reports["regressed"]))
    assert result.exit_code == 1, result.output
    text = result.stdout
    assert "\nnewly failing (1)\n    correct [refund]\n" in text
    assert (
        "        tool_arg_values:issue_refund: Tool 'issue_refund' was called with "
        "[{'order_id': 'ORD-7731', 'amount': 500}], not {'order_id': 'ORD-7731', "
        "'amount': 49.99}.\n"
    ) in text
    assert text.endswith(
        "\nREGRESSED: 1 newly failing row; metric 'tool_arg_values' pass rate fell from 3/4 "
        "to 2/4 (-25.0 points)\n"
    )


def test_tolerance_lets_a_small_regression_pass(reports):
    base, regressed = str(reports["base"]), str(reports["regressed"])
    assert compare(base, regressed, "--tolerance", "0.25").exit_code == 0
    assert compare(base, regressed, "--tolerance", "0.2").exit_code == 1
    bad = compare(base, regressed, "--tolerance", "2")
    assert bad.exit_code == 2


def test_json_output(reports):
    result = compare(str(reports["base"]), str(reports["regressed"]), "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["regressed"] is True
    assert data["counts"] == {
        "newly-failing": 1,
        "newly-passing": 0,
        "still-failing": 3,
        "still-passing": 0,
        "added": 0,
        "removed": 0,
    }
    [row] = data["rows"]["newly-failing"]
    assert row["label"] == "correct" and row["case_id"] == "refund"
    assert row["base_trace_id"] == row["new_trace_id"] == "55da56e89fc4b19f37a5448ebf293b63"
    assert [f["name"] for f in row["failures"]] == ["tool_arg_values:issue_refund"]
    metrics = {m["metric"]: m for m in data["metrics"]}
    assert metrics["tool_arg_values"] == {
        "metric": "tool_arg_values",
        "base": {"passed": 3, "total": 4},
        "new": {"passed": 2, "total": 4},
        "delta": -0.25,
    }
    assert metrics["contains"]["delta"] == 0.0


def test_markdown_output(reports, tmp_path):
    out = tmp_path / "comment.md"
    result = compare(str(reports["base"]), str(reports["fixed"]), "--format", "markdown",
                     "--out", str(out))  # fmt: skip
    assert result.exit_code == 0
    text = out.read_text()
    assert "**no regression (tolerance 0)**" in text
    assert "| newly passing | wrong-amount \\[refund\\] |  |\n" in text
    assert (
        "| still failing | looping \\[refund\\] | tool\\_call\\_precision: 5/6 tool calls" in text
    )
    assert "| tool\\_arg\\_values | 3/4 75.0% | 4/4 100.0% | +25.0 |\n" in text


def test_html_output_marks_each_rows_change(reports, tmp_path):
    out = tmp_path / "compare.html"
    result = compare(str(reports["base"]), str(reports["fixed"]), "--format", "html",
                     "--out", str(out))  # fmt: skip
    assert result.exit_code == 0
    dom = parse(out.read_text())
    changes = {
        s.find_all("h3")[0].text().split()[1]: s.attrs.get("data-change")
        for s in dom.find_all("section", "row")
    }
    assert changes == {
        "correct": "still-passing",
        "skipped-verification": "still-failing",
        "looping": "still-failing",
        "wrong-amount": "newly-passing",
    }
    pickers = [s.attrs["data-filter"] for s in dom.find_all("select")]
    assert "change" in pickers


def _row(label: str, passed: bool, trace_id: str) -> CaseResult:
    score = Score(name="m", metric="m", value=float(passed), passed=passed, explanation="")
    return CaseResult(case_id="policy", passed=passed, scores=[score], trace_id=trace_id,
                      label=label)  # fmt: skip


def test_rows_sharing_a_label_are_matched_by_trace_id_when_the_dump_is_the_same():
    base = EvaluationReport.from_results(None, [_row("x", True, "t1"), _row("x", False, "t2")])
    new = EvaluationReport.from_results(None, [_row("x", False, "t2"), _row("x", False, "t1")])
    comparison = compare_reports(base, new)
    kinds = {r.new.trace_id: r.change for r in comparison.rows if r.new is not None}
    assert kinds == {"t1": NEWLY_FAILING, "t2": STILL_FAILING}
    # another dump (other trace ids): matched by their order among the rows sharing the label
    other = EvaluationReport.from_results(None, [_row("x", True, "u1"), _row("x", True, "u2")])
    kinds = [r.change for r in compare_reports(base, other).rows]
    assert kinds == ["newly-passing"]


def test_an_unreadable_report_is_a_usage_error(tmp_path, reports):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = compare(str(reports["base"]), str(bad))
    assert result.exit_code == 2
    assert f"tooltrail compare: {bad}: not JSON" in result.output
