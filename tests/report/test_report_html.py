"""The HTML report (``tooltrail eval --format html``, ``tooltrail report REPORT.json``): opened
in a real headless Chromium where one is installed (.ci/run installs Debian's ``chromium``),
driven by Playwright so the tests see every JavaScript dialog a page opens. Two positive
controls keep that detector honest: a page that calls ``alert`` and the hostile report with its
escaping undone must both be seen opening dialogs."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from headless_browser import launched, needs_browser, visit
from refund_variants import REFUND_DUMP, REFUND_SUITE, refund_variant

from tooltrail.checks.score import Score
from tooltrail.cli import main
from tooltrail.report.html import render_html
from tooltrail.report.trajectory import TimelineSpan, Trajectory
from tooltrail.results import CaseResult, EvaluationReport

if TYPE_CHECKING:
    from playwright.sync_api import Browser

TITLE = "refund-agent (version 1.0): tooltrail report"
# Hostile text a traced agent may pass as tool arguments or a run's label: each would open a
# dialog (alert 1, 2, 3) if the report let it run.
SCRIPT_TEXT = "<script>alert(1)</script>"
IMG_TEXT = '"><img src=x onerror=alert(2)>'
LABEL_TEXT = "<script>alert(3)</script>"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the module's tests (each test opens its own page)."""
    with launched() as chromium:
        yield chromium


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                    found.append(child)
                found.extend(child.find_all(tag, cls))
        return found


class _TreeBuilder(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "source", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in self.VOID:
            self.current = node

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(page: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(page)
    return builder.root


def row_section(dom: Node, label: str) -> Node:
    rows = [s for s in dom.find_all("section", "row") if label in s.find_all("h3")[0].text()]
    assert len(rows) == 1, [s.find_all("h3")[0].text() for s in dom.find_all("section", "row")]
    return rows[0]


def eval_html(tmp_path: Path, *inputs: Path, name: str = "report.html") -> Path:
    out = tmp_path / name
    args = ["eval", str(REFUND_SUITE), *map(str, inputs), "--format", "html", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--workers", "1", "-q"])
    assert result.exit_code == 1, result.output  # three of the four runs fail
    return out


@needs_browser
def test_the_failing_run_shows_the_offending_call_highlighted_in_a_browser(tmp_path, browser):
    page = eval_html(tmp_path, REFUND_DUMP)
    screenshot = tmp_path / "report.png"
    seen = visit(browser, page, screenshot=screenshot)
    assert seen.dialogs == [] and seen.errors == []
    assert seen.title == TITLE
    dom = parse(seen.dom)
    section = row_section(dom, "wrong-amount")
    assert section.attrs["data-result"] == "fail"
    highlighted = section.find_all("div", "offending")
    calls = [n for n in highlighted if "call" in n.classes]
    assert len(calls) == 1
    text = " ".join(calls[0].text().split())
    assert text.startswith('issue_refund({"amount":499.9,"order_id":"ORD-7731"})')
    assert "tool_arg_values:issue_refund: Tool 'issue_refund' was called with" in text
    assert "'amount': 499.9}], not {'order_id': 'ORD-7731', 'amount': 49.99}" in text
    # the highlighted timeline row is the issue_refund span the evaluation event points at
    spans = [n for n in highlighted if "sp" in n.classes]
    assert [" ".join(s.find_all("div", "name")[0].text().split()) for s in spans] == [
        "tool execute_tool issue_refund"
    ]
    assert spans[0].attrs["data-span-id"] == calls[0].attrs["data-span-id"]
    # the other calls of the run are shown, not highlighted
    plain = [n for n in section.find_all("div", "call") if "offending" not in n.classes]
    assert [n.text().split("(")[0] for n in plain] == ["lookup_order", "verify_identity"]
    assert "Your refund of $49.99" in section.find_all("div", "reply")[0].text()
    # the passing run is listed after the failing ones; the filter script ran (it counts)
    labels = [s.find_all("h3")[0].text() for s in dom.find_all("section", "row")]
    shown = [b for b in dom.find_all("b") if b.attrs.get("id") == "shown"]
    assert shown[0].text() == "4"
    assert [label.split()[1] for label in labels] == [
        "skipped-verification",
        "wrong-amount",
        "looping",
        "correct",
    ]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def hostile_report(tmp_path: Path) -> Path:
    """The refund example's HTML report with script in a tool call's arguments and in a label."""
    dump = refund_variant(
        tmp_path / "hostile.jsonl",
        arguments={
            ("wrong-amount", "issue_refund"): {"order_id": SCRIPT_TEXT, "amount": IMG_TEXT},
        },
        rename={"looping": LABEL_TEXT},
    )
    return eval_html(tmp_path, dump)


@needs_browser
def test_script_in_tool_arguments_and_labels_runs_nothing_and_shows_literally(tmp_path, browser):
    seen = visit(browser, hostile_report(tmp_path))
    assert seen.dialogs == []  # no alert(1), alert(2) or alert(3) opened
    assert seen.errors == []
    assert seen.title == TITLE
    # the text a reader sees holds the hostile text literally, as the agent sent it
    assert SCRIPT_TEXT in seen.text
    assert IMG_TEXT.replace('"', '\\"') in seen.text  # inside the arguments' JSON
    assert LABEL_TEXT in seen.text
    dom = parse(seen.dom)
    assert len(dom.find_all("script")) == 1  # the report's own filtering script only
    assert dom.find_all("img") == []
    section = row_section(dom, "wrong-amount")
    call = [n for n in section.find_all("div", "call") if "offending" in n.classes][0]
    code = call.find_all("code")[0].text()
    assert json.loads(code) == {"amount": IMG_TEXT, "order_id": SCRIPT_TEXT}
    assert SCRIPT_TEXT in call.text()
    labels = [s.find_all("h3")[0].text() for s in dom.find_all("section", "row")]
    assert any(LABEL_TEXT in label for label in labels)


@needs_browser
def test_the_dialog_detector_sees_a_page_that_calls_alert(tmp_path, browser):
    """Positive control: the same detector, on a tiny page that does call alert."""
    page = tmp_path / "alert.html"
    page.write_text(f"<!DOCTYPE html><title>t</title><p>hello</p>{SCRIPT_TEXT}{IMG_TEXT}")
    seen = visit(browser, page)
    assert sorted(seen.dialogs) == [("alert", "1"), ("alert", "2")]
    assert "hello" in seen.text and SCRIPT_TEXT not in seen.text


@needs_browser
def test_the_detector_sees_the_hostile_text_fire_in_a_report_that_does_not_escape_it(
    tmp_path, browser
):
    """Positive control: the hostile report with its escaping and its Content-Security-Policy
    undone by hand runs all three payloads, so the test above would see them if they ran."""
    page = hostile_report(tmp_path)
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    for hostile in (SCRIPT_TEXT, IMG_TEXT, LABEL_TEXT):
        assert html.escape(hostile) in text
        text = text.replace(html.escape(hostile), hostile)
    unsafe = tmp_path / "unsafe.html"
    unsafe.write_text(text)
    seen = visit(browser, unsafe)
    assert {message for _, message in seen.dialogs} == {"1", "2", "3"}
    assert SCRIPT_TEXT not in seen.text


def test_eval_json_then_report_html_gives_the_same_page(tmp_path):
    direct = eval_html(tmp_path, REFUND_DUMP)
    saved = tmp_path / "report.json"
    args = ["eval", str(REFUND_SUITE), str(REFUND_DUMP), "--format", "json", "--out", str(saved)]
    assert CliRunner().invoke(main, [*args, "--trajectories", "-q"]).exit_code == 1
    later = tmp_path / "later.html"
    result = CliRunner().invoke(main, ["report", str(saved), "--out", str(later)])
    assert result.exit_code == 0, result.output
    assert later.read_text() == direct.read_text()
    assert later.stat().st_mode & 0o777 == 0o600
    # the saved JSON is still a report `tooltrail gate` and older readers take
    gate = tmp_path / "gate.yaml"
    gate.write_text("min_pass_rate: 0.25\n")
    assert CliRunner().invoke(main, ["gate", str(saved), "--gate", str(gate)]).exit_code == 0
    data = json.loads(saved.read_text())
    assert EvaluationReport.from_dict(data).summary.passed_cases == 1
    wrong = [row for row in data["cases"] if row["label"] == "wrong-amount"][0]
    issue = [s for s in wrong["trajectory"]["spans"] if s["tool_name"] == "issue_refund"][0]
    assert issue["arguments"] == '{"amount":499.9,"order_id":"ORD-7731"}'
    assert wrong["trajectory"]["marks"] == {issue["span_id"]: ["tool_arg_values:issue_refund"]}


def test_tool_arguments_are_redacted_in_json_and_html(tmp_path):
    dump = refund_variant(
        tmp_path / "secret.jsonl",
        arguments={
            ("wrong-amount", "issue_refund"): {
                "order_id": "ORD-7731",
                "amount": 499.9,
                "card_number": "4111111111111111",
            }
        },
    )
    page = eval_html(tmp_path, dump).read_text()
    saved = tmp_path / "report.json"
    args = ["eval", str(REFUND_SUITE), str(dump), "--format", "json", "--out", str(saved), "-q"]
    CliRunner().invoke(main, [*args, "--trajectories"])
    trajectories = [row["trajectory"] for row in json.loads(saved.read_text())["cases"]]
    assert len(trajectories) == 4
    assert "4111111111111111" not in json.dumps(trajectories)
    assert "[REDACTED]" in json.dumps(trajectories)
    timeline = page.split("<main>", 1)[1]  # the scores' own explanations are not trajectory
    assert "&quot;card_number&quot;:&quot;[REDACTED]&quot;" in timeline


def test_the_json_report_holds_trajectories_only_when_asked(tmp_path):
    saved = tmp_path / "report.json"
    args = ["eval", str(REFUND_SUITE), str(REFUND_DUMP), "--format", "json", "--out", str(saved)]
    CliRunner().invoke(main, [*args, "-q"])
    assert all("trajectory" not in row for row in json.loads(saved.read_text())["cases"])
    page = tmp_path / "report.html"
    args = ["eval", str(REFUND_SUITE), str(REFUND_DUMP), "--format", "html", "--out", str(page)]
    CliRunner().invoke(main, [*args, "-q", "--no-trajectories"])
    text = page.read_text()
    assert text.count("Trajectory not embedded in this report.") == 3  # the failing rows
    assert "and 0 of 1 passing rows (a sample)" in text


def test_an_unreadable_report_is_a_usage_error_naming_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "cases": [{"case_id": "a", "passed": true, '
                   '"trajectory": {"spans": 5}}]}')  # fmt: skip
    result = CliRunner().invoke(main, ["report", str(bad)])
    assert result.exit_code == 2
    assert f"tooltrail report: {bad}: cases[0].trajectory: malformed" in result.output


def _row(n: int, passed: bool, case_id: str = "refund") -> CaseResult:
    score = Score(name="required_tool:x", metric="required_tool", value=float(passed),
                  passed=passed, explanation="Required tool 'x' was not called.")  # fmt: skip
    return CaseResult(case_id=case_id, passed=passed, scores=[score], trace_id=f"{n:032x}",
                      label=f"run {n}")  # fmt: skip


def test_a_large_run_lists_the_first_failing_rows_and_a_sample_with_counts():
    rows = [_row(n, passed=n % 4 != 0) for n in range(12_000)]
    report = EvaluationReport.from_results(None, rows)
    sample = {n: Trajectory(trace_ids=[], spans=[]) for n in range(1, 200, 10)}
    page = render_html(report, trajectories=sample)
    assert page.count('<section class="row') == 2000 + 20
    assert "Listed: 2000 of 3000 failing rows" in page
    assert "and 20 of 9000 passing rows (a sample)" in page


def test_attribute_text_is_escaped_so_it_cannot_leave_its_attribute():
    case_id = "x\" onmouseover=\"document.title='hover'\" data-y='"
    report = EvaluationReport.from_results(None, [_row(1, False, case_id=case_id)])
    dom = parse(render_html(report))
    section = dom.find_all("section", "row")[0]
    assert section.attrs["data-case"] == case_id
    assert "onmouseover" not in section.attrs
    options = [o.attrs["value"] for o in dom.find_all("option")]
    assert case_id in options


def _span(span_id: str, parent: str, start: float, duration: float, **extra: object):
    return TimelineSpan(span_id=span_id, parent_span_id=parent, name=f"span {span_id}",
                        kind=str(extra.pop("kind", "tool")), start_ms=start,
                        duration_ms=duration, **extra)  # type: ignore[arg-type]  # fmt: skip


def test_timeline_nests_marks_parallel_calls_and_groups_turns():
    trajectory = Trajectory(
        trace_ids=["t1", "t2"],
        turns=2,
        spans=[
            _span("a", "", 0, 100, kind="agent", turn=None),
            _span("m", "a", 1, 20, kind="model", turn=1),
            _span("c1", "a", 25, 30, tool_name="search", arguments="{}", turn=1),
            _span("c2", "a", 30, 30, tool_name="search", arguments="{}", turn=1),
            _span("c3", "a", 70, 5, tool_name="book", arguments=None, turn=2),
        ],
        marks={"c3": ["required_tool:x"]},
        reply="done",
    )
    report = EvaluationReport.from_results(None, [_row(0, False)])
    dom = parse(render_html(report, trajectories={0: trajectory}))
    headings = [h.text() for h in dom.find_all("h4")]
    assert headings == ["Conversation", "Turn 1", "Turn 2"]
    rows = {r.attrs["data-span-id"]: r for r in dom.find_all("div", "sp")}
    padding = {k: r.find_all("div", "name")[0].attrs["style"] for k, r in rows.items()}
    assert padding["a"] == "padding-left:0px" and padding["c1"] == "padding-left:14px"
    parallel = {k for k, r in rows.items() if "parallel" in r.text()}
    assert parallel == {"c1", "c2"}
    assert "offending" in rows["c3"].classes
    call = [c for c in dom.find_all("div", "call") if c.attrs["data-span-id"] == "c3"][0]
    assert "(arguments not captured)" in call.text()
    assert "required_tool:x: Required tool 'x' was not called." in call.text()
