"""``tooltrail eval --labels`` on the labelled set (48 recorded refund runs of the corpus,
tests/data/labels): every report format carries the agreement of each labelled check, with
the numbers worked out by hand in ``labelled_runs`` (the judge: the real OpenAI SDK against the
scripted loopback server, agreeing and disagreeing with the labels in a known pattern). The
HTML page is opened in headless Chromium."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from headless_browser import launched, needs_browser, visit
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from labelled_runs import (
    DISAGREEING,
    LABELS_CSV,
    RUNS,
    assert_judged_in_order,
    judge_replies,
    run_eval,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser

POLICY_LINE = (
    "refund_policy (judge): 48 labelled verdicts; accuracy 87.5% (42/48), kappa 0.750, true "
    "positive rate 91.7% (22/24), true negative rate 83.3% (20/24)"
)
POLICY_MATRIX = [
    "                  check pass  check fail",
    "    human pass            22           2",
    "    human fail             4          20",
]
ARGS_LINE = (
    "tool_arg_values:issue_refund (check): 48 labelled verdicts; accuracy 83.3% (40/48), "
    "kappa 0.571, true positive rate 100.0% (32/32), true negative rate 50.0% (8/16)"
)
VERIFY_LINE = (
    "required_tool:verify_identity (check): 48 labelled verdicts; accuracy 100.0% (48/48), "
    "kappa 1.000, true positive rate 100.0% (32/32), true negative rate 100.0% (16/16)"
)
HEADLINE = f"{LABELS_CSV.relative_to(LABELS_CSV.parents[3])}: 144 labels, 144 matched a score"


def labelled_report(judge_server: JudgeServer, fmt: str, out: Path, *flags: str) -> str:
    judge_server.script(*judge_replies())
    labels = LABELS_CSV.relative_to(LABELS_CSV.parents[3])  # as a user types it, from the root
    code, stdout, stderr = run_eval(
        judge_server, "--format", fmt, "--out", str(out), *flags, labels=labels
    )
    assert code == 1, stderr  # the failing runs fail, as without labels
    assert "matched no score" not in stderr
    assert judge_server.count == len(RUNS)
    return out.read_text(encoding="utf-8")


def test_the_text_report_ends_with_each_checks_agreement_before_the_count(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    text = labelled_report(judge_server, "text", tmp_path / "report.txt")
    section = text[text.index("agreement with labels") :].splitlines()
    assert section[0] == f"agreement with labels ({HEADLINE})"
    assert section[1] == POLICY_LINE
    assert section[2:5] == POLICY_MATRIX
    assert section[5] == "    6 disagreeing runs:"
    listed = section[6:12]
    assert [line.split(":")[0].strip() for line in listed] == [r.trace_id for r in DISAGREEING]
    assert listed[0] == (
        f"        {DISAGREEING[0].trace_id}: human fail, check pass; notes: google-adk "
        "c_refund_wrong_amount: refunds 499.9, not 49.99; check: Judge passed the run "
        "(policy_followed): google-adk c_refund_wrong_amount"
    )
    assert section[12] == VERIFY_LINE
    assert ARGS_LINE in section
    assert section[-1] == "22/48 runs passed"  # the count stays the last line


def test_the_json_report_holds_the_counts_figures_and_every_disagreement(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    report = json.loads(labelled_report(judge_server, "json", tmp_path / "report.json"))
    assert_judged_in_order(report)
    agreement = report["agreement"]
    assert list(report)[-2:] == ["agreement", "cases"]
    assert (agreement["labels"], agreement["matched"], agreement["unmatched"]) == (144, 144, [])
    checks = {check["check"]: check for check in agreement["checks"]}
    assert list(checks) == [
        "refund_policy",
        "required_tool:verify_identity",
        "tool_arg_values:issue_refund",
    ]
    policy = checks["refund_policy"]
    assert policy["matrix"] == {
        "true_positive": 22,
        "false_negative": 2,
        "false_positive": 4,
        "true_negative": 20,
    }
    assert (policy["judge"], policy["compared"], policy["no_verdict"]) == (True, 48, 0)
    assert policy["accuracy"] == 0.875
    assert policy["kappa"] == 0.75
    assert policy["true_positive_rate"] == 22 / 24
    assert policy["true_negative_rate"] == 20 / 24
    assert policy["self_agreement"] is None  # one sample per judgement
    assert [(d["trace_id"], d["human"], d["check"]) for d in policy["disagreements"]] == [
        (run.trace_id, "pass" if run.scenario.startswith("f_") else "fail",
         "fail" if run.scenario.startswith("f_") else "pass")
        for run in DISAGREEING
    ]  # fmt: skip
    args = checks["tool_arg_values:issue_refund"]
    assert args["kappa"] == float(Fraction(4, 7)) and args["judge"] is False
    assert {d["notes"].split(":")[0] for d in args["disagreements"]} == {
        f"{run.framework} f2_tool_error_fatal" for run in RUNS[:: len(RUNS) // 8]
    }
    assert checks["required_tool:verify_identity"]["kappa"] == 1.0


def test_the_junit_report_carries_the_figures_as_properties_and_the_section_as_output(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    document = ET.fromstring(labelled_report(judge_server, "junit", tmp_path / "report.xml"))
    (suite,) = document.findall("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["agreement.labels"] == "144"
    assert properties["agreement.refund_policy.kappa"] == "0.75"
    assert properties["agreement.refund_policy.accuracy"] == "0.875"
    assert properties["agreement.refund_policy.judge"] == "true"
    assert [
        properties[f"agreement.refund_policy.{cell}"]
        for cell in ("true_positive", "false_negative", "false_positive", "true_negative")
    ] == ["22", "2", "4", "20"]
    assert properties["agreement.refund_policy.disagreements"] == "6"
    assert properties["agreement.refund_policy.self_agreement"] == ""
    assert properties["agreement.tool_arg_values:issue_refund.kappa"] == str(float(Fraction(4, 7)))
    assert len(suite.findall("testcase")) == 48
    output = suite.find("system-out")
    assert output is not None and output.text is not None
    lines = output.text.splitlines()
    assert lines[1:5] == [POLICY_LINE, *POLICY_MATRIX]
    assert list(suite)[-1] is output  # after the testcases, as the schema orders them


def test_the_markdown_report_has_a_table_of_figures_and_a_matrix_per_check(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    text = labelled_report(judge_server, "markdown", tmp_path / "report.md")
    section = text[text.index("### Agreement with labels") :]
    assert (
        "| refund\\_policy | judge | 48 | 87.5% (42/48) | 0.750 | 91.7% (22/24) "
        "| 83.3% (20/24) | n/a | 0 |\n"
    ) in section
    assert (
        "| tool\\_arg\\_values:issue\\_refund | check | 48 | 83.3% (40/48) | 0.571 "
        "| 100.0% (32/32) | 50.0% (8/16) | n/a | 0 |\n"
    ) in section
    policy = section[section.index("#### refund\\_policy") :]
    assert policy.startswith(
        "#### refund\\_policy\n\n"
        "| | check pass | check fail |\n|---|---:|---:|\n"
        "| **human pass** | 22 | 2 |\n"
        "| **human fail** | 4 | 20 |\n\n"
        "6 disagreeing runs:\n\n"
    )
    for run in DISAGREEING:
        assert f"| {run.trace_id} | {run.trace_id} |" in policy


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched() as chromium:
        yield chromium


@needs_browser
def test_the_html_page_shows_the_figures_and_matrix_in_chromium_and_runs_no_label_text(
    tmp_path: Path, judge_server: JudgeServer, browser: Browser
) -> None:
    # A hostile note on a disagreeing run: the page must show it as text, never run it.
    hostile = tmp_path / "labels.csv"
    notes = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    lines = LABELS_CSV.read_text(encoding="utf-8").splitlines()
    target = next(i for i, line in enumerate(lines) if line.startswith(DISAGREEING[0].trace_id))
    trace_id, check, verdict, _ = lines[target].split(",", 3)
    lines[target] = f'{trace_id},{check},{verdict},"{notes.replace(chr(34), chr(34) * 2)}"'
    hostile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    judge_server.script(*judge_replies())
    page = tmp_path / "report.html"
    code, _, stderr = run_eval(judge_server, "--format", "html", "--out", str(page), labels=hostile)
    assert code == 1, stderr
    seen = visit(browser, page)
    assert seen.dialogs == [] and seen.errors == []
    assert "Agreement with labels" in seen.text
    assert "144 labels, 144 matched a score" in seen.text
    assert notes in seen.text  # shown as written
    rows = [
        line.split("\t")
        for line in seen.text.splitlines()
        if line.startswith(("refund_policy\t", "tool_arg_values:issue_refund\t"))
    ]
    assert rows == [
        ["refund_policy", "judge", "48", "87.5% (42/48)", "0.750", "91.7% (22/24)",
         "83.3% (20/24)", "n/a", "0"],
        ["tool_arg_values:issue_refund", "check", "48", "83.3% (40/48)", "0.571",
         "100.0% (32/32)", "50.0% (8/16)", "n/a", "0"],
    ]  # fmt: skip
    matrix = _matrix(seen.dom, "refund_policy")
    assert matrix == [["human pass", "22", "2"], ["human fail", "4", "20"]]
    assert "6 disagreeing runs:" in seen.text
    for run in DISAGREEING:
        assert run.trace_id in seen.text


def _matrix(dom: str, check: str) -> list[list[str]]:
    """The body cells of ``check``'s confusion matrix in the page's DOM."""
    from html.parser import HTMLParser

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.inside = self.in_matrix = False
            self.rows: list[list[str]] = []
            self.cell: list[str] | None = None

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found = dict(attrs)
            if tag == "div" and found.get("data-check") == check:
                self.inside = True
            elif self.inside and tag == "table" and found.get("class") == "matrix":
                self.in_matrix = True
            elif self.in_matrix and tag == "tr":
                self.rows.append([])
            elif self.in_matrix and tag in ("td", "th"):
                self.cell = []

        def handle_endtag(self, tag: str) -> None:
            if self.in_matrix and tag in ("td", "th") and self.cell is not None:
                self.rows[-1].append("".join(self.cell))
                self.cell = None
            elif tag == "table" and self.in_matrix:
                self.in_matrix = self.inside = False

        def handle_data(self, data: str) -> None:
            if self.cell is not None:
                self.cell.append(data)

    parser = Cells()
    parser.feed(dom)
    return parser.rows[1:]
