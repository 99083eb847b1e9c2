"""JUnit XML: one ``testcase`` per row; a failing row lists its failing scores.

CI systems (GitHub, GitLab, Jenkins) show these natively. Text is stripped of characters XML
1.0 cannot carry, so tool arguments with control characters never make the file unreadable.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from tooltrail.evaluate import EvaluationReport

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def render_junit(report: EvaluationReport) -> str:
    """The report as a JUnit XML document (``testsuites`` > ``testsuite`` > ``testcase``)."""
    suite_name = report.suite_name or "tooltrail"
    failures = sum(1 for row in report.cases if not row.passed)
    errors = sum(1 for row in report.cases if not row.passed and any(s.error for s in row.failures))
    root = ET.Element(
        "testsuites",
        name=_clean(suite_name),
        tests=str(len(report.cases)),
        failures=str(failures - errors),
        errors=str(errors),
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name=_clean(suite_name),
        tests=str(len(report.cases)),
        failures=str(failures - errors),
        errors=str(errors),
        skipped="0",
    )
    if report.suite_version:
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="version", value=_clean(report.suite_version))
    for row in report.cases:
        case = ET.SubElement(
            suite, "testcase", classname=_clean(suite_name), name=_clean(row.label)
        )
        if row.trace_id:
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="trace_id", value=_clean(row.trace_id))
            ET.SubElement(props, "property", name="case_id", value=_clean(row.case_id))
        failed = row.failures
        if failed:
            broken = [s for s in failed if s.error]
            tag = "error" if broken else "failure"
            kind = broken[0].error if broken else "tooltrail.ScoreFailed"
            names = ", ".join(s.name for s in failed)
            element = ET.SubElement(
                case,
                tag,
                message=_clean(f"{len(failed)} of {len(row.scores)} scores failed: {names}"),
                type=_clean(kind or "error"),
            )
            element.text = _clean("\n".join(f"{s.name}: {s.explanation}" for s in failed))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
