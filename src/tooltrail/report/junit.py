"""JUnit XML: one ``testcase`` per row; a failing row lists its failing scores.

CI systems (GitHub, GitLab, Jenkins) show these natively. Text is stripped of characters XML
1.0 cannot carry, so tool arguments with control characters never make the file unreadable.

With labels (``tooltrail eval --labels``), the test suite's properties carry each labelled
check's agreement (``agreement.{check}.kappa``, ``.accuracy``, the rates, the matrix's cells)
and its ``system-out`` the section as the text report prints it, disagreeing runs included.

The document is written as text, row by row (``iter_junit``), so a report of any size streams to
a file in bounded memory (``write_junit``); the bytes are those ``xml.etree.ElementTree`` writes
for the same tree after ``ET.indent``, two spaces per level.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from tooltrail.report.agreement import render_agreement_text
from tooltrail.report.stream import REMEMBERED_TEXTS, TextSink, write_pieces
from tooltrail.report.trials import junit_properties, repeated
from tooltrail.results import CaseResult, EvaluationReport

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


#: What ElementTree escapes in attribute values beyond ``&``, ``<`` and ``>``.
_ATTR_ENTITIES = {'"': "&quot;", "\r": "&#13;", "\n": "&#10;", "\t": "&#09;"}


def _text(text: str) -> str:
    """Element text: XML-safe, then escaped as ElementTree escapes character data."""
    return escape(_clean(text))


def _attr(text: str) -> str:
    """An attribute value: escaped as element text, plus what ElementTree escapes in attributes.

    Letters and digits alone (a trace id, most labels and case ids) need nothing: returned as
    they are, which skips a third of the JUnit writer's time on a run of many passing rows."""
    if text.isalnum():
        return text
    return escape(_clean(text), _ATTR_ENTITIES)


def iter_junit(report: EvaluationReport, *, agreement: Agreement | None = None) -> Iterator[str]:
    """The JUnit XML document in pieces: the head, then one ``testcase`` per row, then the end
    (with ``agreement``: its properties, and the section as ``system-out``)."""
    suite_name = _attr(report.suite_name or "tooltrail")
    rows = report.cases
    failures, errors = _failing(report)
    counts = f'tests="{len(rows)}" failures="{failures - errors}" errors="{errors}"'
    yield f'{XML_DECLARATION}<testsuites name="{suite_name}" {counts}>\n  '
    suite = f'<testsuite name="{suite_name}" {counts} skipped="0"'
    judge = report.summary.judge
    if not rows and not report.suite_version and judge is None and agreement is None:
        yield suite + " />\n</testsuites>\n"
        return
    yield suite + ">"
    properties = []
    if report.suite_version:
        properties.append(("version", report.suite_version))
    if judge is not None:  # what judging cost: tokens, dollars, requests, a spent budget
        properties += [(f"judge.{k}", _value(v)) for k, v in judge.to_dict().items()]
    if agreement is not None:
        properties += _agreement_properties(agreement)
    for verdict in repeated(report.summary.runs):  # trials.{case}.{figure}
        properties += junit_properties(verdict)
    if properties:
        yield (
            "\n    <properties>"
            + "".join(
                f'\n      <property name="{_attr(name)}" value="{_attr(value)}" />'
                for name, value in properties
            )
            + "\n    </properties>"
        )
    # A failing row's message and text are made of its scores' names and explanations, which
    # repeat from row to row: each distinct one is escaped once for the document (half of this
    # writer's time was ``re.sub`` and the escapes of the same texts).
    attribute, text = (
        lru_cache(maxsize=REMEMBERED_TEXTS)(_attr),
        lru_cache(maxsize=REMEMBERED_TEXTS)(_text),
    )
    for row in rows:
        yield "\n    " + _testcase(row, suite_name, attribute, text)
    if agreement is not None:
        yield f"\n    <system-out>{_text(render_agreement_text(agreement))}</system-out>"
    yield "\n  </testsuite>\n</testsuites>\n"


def _agreement_properties(agreement: Agreement) -> list[tuple[str, str]]:
    """``agreement.{check}.{figure}`` per labelled check (an empty value: not computed)."""
    found = [
        ("agreement.labels", str(agreement.labels)),
        ("agreement.matched", str(agreement.matched)),
    ]
    for check in agreement.checks:
        own = check.self_agreement
        figures = {
            "judge": str(check.judge).lower(),
            "compared": check.compared,
            "accuracy": check.accuracy,
            "kappa": check.kappa,
            "true_positive_rate": check.true_positive_rate,
            "true_negative_rate": check.true_negative_rate,
            "true_positive": check.true_positive,
            "false_negative": check.false_negative,
            "false_positive": check.false_positive,
            "true_negative": check.true_negative,
            "no_verdict": check.no_verdict,
            "disagreements": len(check.disagreements),
            "self_agreement": None if own is None else own.mean,
        }
        found += [
            (f"agreement.{check.check}.{name}", "" if value is None else str(value))
            for name, value in figures.items()
        ]
    return found


def _failing(report: EvaluationReport) -> tuple[int, int]:
    """Failing rows, and those of them failing with an error: counted by the summary's walk
    (``Summary.error_rows``), else by a walk of their own (a summary made elsewhere)."""
    summary = report.summary
    if summary.error_rows is not None:
        return summary.total_cases - summary.passed_cases, summary.error_rows
    failures = errors = 0
    for row in report.cases:
        if not row.passed:
            failures += 1
            if any(s.error for s in row.failures):
                errors += 1
    return failures, errors


def _value(value: object) -> str:
    return ",".join(value) if isinstance(value, list) else str(value)


def _testcase(
    row: CaseResult, classname: str, attribute: Callable[[str], str], text: Callable[[str], str]
) -> str:
    """One ``testcase`` element, indented for its place in the document (no leading space).
    ``attribute`` and ``text`` are ``_attr`` and ``_text`` (remembered for the document); both
    change one character at a time, so the escape of joined pieces is the join of the pieces'
    escapes."""
    children = []
    if row.trace_id:
        children.append(
            "<properties>"
            f'\n        <property name="trace_id" value="{_attr(row.trace_id)}" />'
            f'\n        <property name="case_id" value="{attribute(row.case_id)}" />'
            "\n      </properties>"
        )
    failed = row.failures
    if failed:
        broken = [s for s in failed if s.error]
        tag = "error" if broken else "failure"
        kind = broken[0].error if broken else "tooltrail.ScoreFailed"
        names = ", ".join([attribute(s.name) for s in failed])
        message = f"{len(failed)} of {len(row.scores)} scores failed: {names}"
        head = f'<{tag} message="{message}" type="{attribute(kind or "error")}"'
        lines = "\n".join([f"{text(s.name)}: {text(s.explanation)}" for s in failed])
        children.append(f"{head}>{lines}</{tag}>" if lines else head + " />")
    head = f'<testcase classname="{classname}" name="{_attr(row.label)}"'
    if not children:
        return head + " />"
    return head + ">" + "".join("\n      " + child for child in children) + "\n    </testcase>"


def render_junit(report: EvaluationReport, *, agreement: Agreement | None = None) -> str:
    """The report as a JUnit XML document (``testsuites`` > ``testsuite`` > ``testcase``)."""
    return "".join(iter_junit(report, agreement=agreement))


def write_junit(
    report: EvaluationReport, out: TextSink, *, agreement: Agreement | None = None
) -> None:
    """Write the JUnit XML report to ``out`` as it is rendered (the same text as
    ``render_junit``)."""
    write_pieces(iter_junit(report, agreement=agreement), out)
