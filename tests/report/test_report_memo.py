"""Writers that escape each distinct text once per document (``functools.lru_cache``): the
same documents as escaping every cell, and the escape asked once for a text that repeats."""

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from test_report_stream import SUITE, junit_reference

import tooltrail.report.junit as junit
import tooltrail.report.markdown as markdown
from tooltrail import CaseResult, EvaluationReport, Score, write_junit, write_markdown

# Texts a report must escape, and repeats of them, as a run's rows repeat a check's texts.
texts = st.sampled_from(["", "a&b", "<x>", '"q"', "a\r\nb", "\x00\x1b", "|*_", "ok", "é"])


def cell(text: str) -> str:
    """A Markdown cell, one character at a time (independent of the writer's escape)."""
    text = text.replace("\r\n", "\n")
    return "".join("<br>" if c == "\n" else "\\" + c if c in "\\`*_[]<>|#~" else c for c in text)


@st.composite
def shared_reports(draw):
    """Rows whose scores are drawn from a few shared objects, as ``RowCompactor`` leaves
    them, and from fresh ones with the same texts."""
    pool = [
        Score(
            draw(texts),
            "required_tool",
            0.0,
            False,
            draw(texts),
            error=draw(st.sampled_from([None, "ConfigError"])),
        )
        for _ in range(draw(st.integers(1, 4)))
    ]
    rows = []
    for n in range(draw(st.integers(0, 8))):
        scores = [
            draw(st.sampled_from(pool))
            if draw(st.booleans())
            else Score(draw(texts), "contains", 1.0, draw(st.booleans()), draw(texts))
            for _ in range(draw(st.integers(0, 4)))
        ]
        passed = not any(s.failed for s in scores)
        rows.append(CaseResult("refund", passed, scores, f"trace{n}", draw(texts) or f"run {n}"))
    return EvaluationReport.from_results(SUITE, rows)


def written(write, report) -> str:
    out = io.StringIO()
    write(report, out)
    return out.getvalue()


@settings(max_examples=200, deadline=None)
@given(shared_reports())
def test_junit_with_repeated_texts_is_what_elementtree_writes(report):
    assert written(write_junit, report) == junit_reference(report)


@settings(max_examples=200, deadline=None)
@given(shared_reports())
def test_markdown_rows_with_repeated_texts_escape_every_cell(report):
    lines = written(write_markdown, report).splitlines()
    start = lines.index("|---|---|---|") + 1
    expected = []
    for row in report.cases:
        failed = "<br>".join(f"{cell(s.name)}: {cell(s.explanation)}" for s in row.failures)
        result = "PASS" if row.passed else "**FAIL**"
        expected.append(f"| {cell(row.label)} | {result} | {failed} |")
    assert lines[start : start + len(expected)] == expected


def failing_rows(count: int) -> EvaluationReport:
    shared = Score("contains:x", "contains", 0.0, False, "Output is missing 'x' <b>.")
    rows = [
        CaseResult(
            "refund",
            False,
            [
                shared,
                Score("tool_order", "tool_order", 0.0, False, "Required order [a|b] not met."),
            ],
            f"trace{n}",
            f"run {n}",
        )
        for n in range(count)
    ]
    return EvaluationReport.from_results(SUITE, rows)


def counting(monkeypatch, module, name):
    """Replace ``module.name`` by a wrapper that counts the texts it is asked for."""
    asked: dict[str, int] = {}
    original = getattr(module, name)

    def spell(text):
        asked[text] = asked.get(text, 0) + 1
        return original(text)

    monkeypatch.setattr(module, name, spell)
    return asked


def test_markdown_escapes_a_repeated_explanation_once(monkeypatch):
    asked = counting(monkeypatch, markdown, "escape")
    text = written(write_markdown, failing_rows(50))
    assert text.count("Output is missing 'x' \\<b\\>.") == 50
    assert asked["Output is missing 'x' <b>."] == 1
    assert asked["Required order [a|b] not met."] == 1  # a fresh object, the same text


def test_junit_escapes_a_repeated_explanation_once(monkeypatch):
    asked = counting(monkeypatch, junit, "_text")
    text = written(write_junit, failing_rows(50))
    assert text.count("contains:x: Output is missing 'x' &lt;b&gt;.") == 50
    assert asked["Output is missing 'x' <b>."] == 1
