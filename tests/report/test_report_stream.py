"""Reports written to a file as they are rendered: the same bytes as the one-string renderers'
references, in bounded memory whatever the number of rows."""

import importlib.util
import io
import json
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seed_report import SEED_REPORT

from tooltrail import (
    CaseResult,
    EvalTrace,
    EvaluationReport,
    EvaluationSample,
    Score,
    TestCase,
    TestSuite,
    evaluate_suite,
    render_junit,
    write_json,
    write_junit,
    write_markdown,
    write_text,
)
from tooltrail.report import iter_json, iter_junit
from tooltrail.report.stream import CHUNK_CHARS, write_pieces
from tooltrail.report.trials import junit_properties, repeated

EXAMPLE = Path(__file__).parents[2] / "examples" / "refund_trajectory.py"


SUITE = TestSuite(
    "refund-agent",
    "1.0",
    [
        TestCase(id="refund", required_tools=["a"]),
        TestCase(id="booking", required_tools=["a"], runs=3, threshold=0.8),
    ],
)


def refund_report() -> EvaluationReport:
    spec = importlib.util.spec_from_file_location("refund_trajectory", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return evaluate_suite(
        TestSuite(name="refund-agent", version="1.0", cases=[module.REFUND_CASE]),
        [
            EvaluationSample(
                "refund",
                module.REPLY,
                EvalTrace(f"trace-{label}", spans=spans, metadata={"turn_count": 1}),
                label=label,
            )
            for label, spans in module.RUNS.items()
        ],
    )


def junit_reference(report: EvaluationReport) -> str:
    """The JUnit document built as an ElementTree tree and serialized by the stdlib."""

    def clean(text: str) -> str:
        return "".join(
            c
            if c in "\t\n\r"
            or "\x20" <= c <= "\ud7ff"
            or "\ue000" <= c <= "\ufffd"
            or c >= "\U00010000"
            else "\ufffd"
            for c in text
        )

    name = clean(report.suite_name or "tooltrail")
    failures = sum(not row.passed for row in report.cases)
    errors = sum(not row.passed and any(s.error for s in row.failures) for row in report.cases)
    counts = {
        "tests": str(len(report.cases)),
        "failures": str(failures - errors),
        "errors": str(errors),
    }
    root = ET.Element("testsuites", name=name, **counts)
    suite = ET.SubElement(root, "testsuite", name=name, **counts, skipped="0")
    properties = [("version", report.suite_version)] if report.suite_version else []
    for verdict in repeated(report.summary.runs):  # a repeated case's figures (report.trials)
        properties += junit_properties(verdict)
    if properties:
        props = ET.SubElement(suite, "properties")
        for key, value in properties:
            ET.SubElement(props, "property", name=clean(key), value=clean(value))
    for row in report.cases:
        case = ET.SubElement(suite, "testcase", classname=name, name=clean(row.label))
        if row.trace_id:
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="trace_id", value=clean(row.trace_id))
            ET.SubElement(props, "property", name="case_id", value=clean(row.case_id))
        failed = row.failures
        if failed:
            broken = [s for s in failed if s.error]
            element = ET.SubElement(
                case,
                "error" if broken else "failure",
                message=clean(
                    f"{len(failed)} of {len(row.scores)} scores failed: "
                    + ", ".join(s.name for s in failed)
                ),
                type=clean((broken[0].error if broken else "tooltrail.ScoreFailed") or "error"),
            )
            element.text = clean("\n".join(f"{s.name}: {s.explanation}" for s in failed))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# Text that XML and Markdown must escape or clean: markup, quotes, line ends, control bytes.
awkward = st.text(max_size=12) | st.sampled_from(
    ["", "a&b", "<x>", '"q"', "it's", "a\r\nb", "\t", "\x00\x1b", "]]>", "\ud800", "é|*_"]
)
# Numbers where JSON encoders are known to differ: floats under 1e-4 (``1e-07`` or
# ``1e-7``), large and tiny exponents, integers past 64 bits.
numbers = (
    st.sampled_from([0.0, -0.0, 1e-07, 2.5e-05, 0.0001, 1e16, 1e-300, 2**64, -(2**63) - 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers()
)
# A plug-in's free-form metadata: any JSON value, keys that are not strings among them.
free_form = st.recursive(
    st.none() | st.booleans() | numbers | awkward,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(awkward | st.integers(-3, 3), inner, max_size=3)
    ),
    max_leaves=8,
)
scores = st.builds(
    Score,
    awkward,
    st.sampled_from(["required_tool", "tool_order", "contains"]),
    st.sampled_from([0.0, 0.5, 1.0, float("nan"), 3e-05, 1e-07]) | st.floats(-1e6, 1e6),
    st.booleans(),
    awkward,
    required=st.booleans(),
    skipped=st.booleans(),
    error=st.sampled_from([None, "", "ConfigError"]),
    metadata=st.none() | st.dictionaries(awkward, free_form, max_size=3),
)
rows = st.builds(
    CaseResult,
    st.sampled_from(["refund", "booking"]),
    st.booleans(),
    st.lists(scores, max_size=4),
    st.sampled_from([None, "", "0af7651916cd43dd8448eb211c80319c", 'a"<&>']),
    awkward,
)
reports = st.builds(
    lambda rows, name, version: EvaluationReport(
        name, version, rows, EvaluationReport.from_results(SUITE, rows).summary
    ),
    st.lists(rows, max_size=5),
    awkward,
    st.sampled_from(["", "1.0", "v<2>"]),
)


def written(write, report, **options) -> str:
    out = io.StringIO()
    write(report, out, **options)
    return out.getvalue()


def test_write_text_to_a_file_is_the_refund_example_block(tmp_path):
    path = tmp_path / "report.txt"
    with path.open("w", encoding="utf-8") as out:
        write_text(refund_report(), out)
    assert path.read_text(encoding="utf-8") == SEED_REPORT


def test_write_markdown_writes_the_table_and_the_metrics():
    report = EvaluationReport.from_results(
        SUITE,
        [
            CaseResult("refund", True, [Score("required_tool:a", "required_tool", 1, True, "ok")]),
            CaseResult(
                "booking",
                False,
                [Score("required_tool:a", "required_tool", 0, False, "a|b\nc")],
                label="run 1",
            ),
        ],
    )
    assert written(write_markdown, report) == (
        "## refund-agent 1.0\n"
        "\n"
        "**1/2 runs passed** (average score 0.50)\n"
        "\n"
        "| Case | Result | Failed scores |\n"
        "|---|---|---|\n"
        "| refund | PASS |  |\n"
        "| run 1 | **FAIL** | required\\_tool:a: a\\|b<br>c |\n"
        "\n"
        "| Metric | Passed | Total |\n"
        "|---|---:|---:|\n"
        "| required\\_tool | 1 | 2 |\n"
        "\n"
        "| Case | Passed runs | Threshold | Result |\n"
        "|---|---:|---:|---|\n"
        "| booking | 0/3 | 0.8 | **FAIL** |\n"
        "\n"
        "| Case | Interval | At the threshold | Flip rate | pass@k | pass^k |\n"
        "|---|---|---|---|---|---|\n"
        "| booking | 95% Wilson interval \\[0.0%, 56.1%\\] | is below the threshold 0.8 "
        "| n/a (1 recorded run) | k=1 0.000, k=2 0.000, k=3 0.000 "
        "| k=1 0.000, k=2 0.000, k=3 0.000 |\n"
    )


@settings(max_examples=200, deadline=None)
@given(reports)
def test_write_junit_writes_what_elementtree_writes_for_the_same_tree(report):
    assert written(write_junit, report) == junit_reference(report)


@settings(max_examples=200, deadline=None)
@given(reports, st.sampled_from([2, None, 0, 4]))
def test_write_json_writes_what_json_dumps_writes_for_the_report_model(report, indent):
    expected = (
        json.dumps(report.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False) + "\n"
    )
    assert written(write_json, report, indent=indent) == expected


def test_junit_of_the_refund_example_parses_with_its_four_runs():
    root = ET.fromstring(written(write_junit, refund_report()))
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [
        "correct",
        "skipped-verification",
        "wrong-amount",
        "looping",
    ]
    assert [c.find("failure") is not None for c in cases] == [False, True, True, True]


def test_pieces_are_written_in_order_in_chunks():
    writes: list[str] = []

    class Sink:
        def write(self, text: str) -> None:
            writes.append(text)

    pieces = [f"{i:05d}\n" for i in range(30_000)]  # 180,000 characters
    write_pieces(pieces, Sink(), chunk_chars=50_000)
    assert "".join(writes) == "".join(pieces)
    assert len(writes) == 4
    assert all(len(w) < 50_000 + 6 for w in writes)


def big_report(n: int) -> EvaluationReport:
    """``n`` rows sharing a few score objects, as a compacted batch report holds them."""
    failing = CaseResult(
        "refund",
        False,
        [
            Score("required_tool:a", "required_tool", 1.0, True, "Required tool 'a' was called."),
            Score(
                "tool_arg_values:pay",
                "tool_arg_values",
                0.0,
                False,
                "Tool 'pay' was called with [{'amount': 499.9}], not {'amount': 49.99}.",
            ),
        ],
        "0af7651916cd43dd8448eb211c80319c",
        "refund run",
    )
    passing = CaseResult("refund", True, failing.scores[:1], "b7ad6b7169203331", "refund ok")
    return EvaluationReport.from_results(SUITE, [failing, passing] * (n // 2))


def test_writing_a_large_report_holds_one_chunk_not_the_document(tmp_path):
    report = big_report(10_000)
    size = sum(len(piece) for piece in iter_junit(report))
    assert size > 40 * CHUNK_CHARS
    with (tmp_path / "junit.xml").open("w", encoding="utf-8") as out:
        tracemalloc.start()
        try:
            write_junit(report, out)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 8 * CHUNK_CHARS  # a chunk and its pieces (UCS-1 text: a byte a character)
    assert (tmp_path / "junit.xml").read_text(encoding="utf-8") == render_junit(report)


def test_json_rows_come_a_bounded_number_a_piece():
    report = big_report(200)
    pieces = list(iter_json(report))
    assert len(pieces) == 1 + 4 + 1  # the head, 64 + 64 + 64 + 8 rows, the end
    assert [piece.count('"case_id"') for piece in pieces[1:-1]] == [64, 64, 64, 8]
    assert json.loads("".join(pieces))["summary"]["total_cases"] == 200


@pytest.mark.parametrize("odd_row", [0, 63, 64, 130, 199])
def test_json_rows_of_a_piece_orjson_may_spell_otherwise_are_written_as_json_writes_them(
    odd_row,
):
    # One row with a float orjson spells unlike ``repr`` (2.5e-05) sends its piece's rows to
    # the standard library one by one; the pieces before and after it stay orjson's.
    report = big_report(200)
    small = Score("tool_call_precision", "tool_call_precision", 2.5e-05, False, "1/40000 ...")
    report.cases[odd_row] = CaseResult("refund", False, [small], "5bd8bb8e0e0d1a1e", "odd")
    expected = json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
    assert "".join(iter_json(report)) == expected + "\n"
