"""Random suites of tooltrail's own checks give the same rows, and byte-identical reports, on
every way a run can take: on every fixture of ``tests/data``, the shared corpus and the
external corpus (when present).

The suites are drawn from each fixture's own vocabulary (its tool names, the arguments its
calls were made with, words of its replies), so that every check both passes and fails
somewhere. The ways compared:

- the object path in memory: ``read_traces`` and ``evaluate_cases`` per trace, with the
  Python engine (the reference);
- ``run_batch`` in this process with the compiled core (when installed), rows kept in memory;
- ``run_batch`` with the compiled core, every row spilled to disk and read back
  (``spill_rows=0``), in small chunks (traces cut across chunks are merged).

This is the differential test the compact path of issue 38 must pass as well: a path that
decides verdicts without the object path plugs in here as one more way.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from core_paths import HAVE_CORE, reading_with
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay import fixture_name, fixture_paths

from tooltrail.batch import run_batch
from tooltrail.batch.matching import row_label
from tooltrail.convert import engine as core
from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace
from tooltrail.report import render_json, render_junit, render_markdown, render_text
from tooltrail.results import CaseResult, EvaluationReport
from tooltrail.score import CasePlans, evaluate_cases
from tooltrail.settings import redaction_from_env
from tooltrail.suite import TestSuite

#: The built-in scorers a random case may name, with the configs drawn for them.
_SCORERS = (
    "tool_call_precision",
    "tool_call_recall",
    "no_redundant_tool_calls",
    "max_tool_calls",
    "trajectory_match",
)
_RENDERERS = (render_json, render_text, render_junit, render_markdown)


class Vocabulary:
    """What a fixture's traces hold for a suite to ask about."""

    def __init__(self, traces: list[EvalTrace]) -> None:
        self.tools = sorted({call.name for trace in traces for call in trace.tool_calls})
        arguments: dict[str, dict[str, Any]] = {}
        for trace in traces:
            for call in trace.tool_calls:
                if isinstance(call.args, dict):
                    for key, value in call.args.items():
                        if isinstance(key, str) and isinstance(value, (str, int, float, bool)):
                            arguments.setdefault(call.name, {}).setdefault(key, value)
        self.arguments = arguments
        words = {
            word
            for trace in traces
            if isinstance(trace.output, str)
            for word in trace.output.split()[:40]
        }
        self.words = sorted(words)[:60]
        self.agents = sorted(
            {str(t.metadata["agent_name"]) for t in traces if t.metadata.get("agent_name")}
        )


_VOCABULARIES: dict[Path, Vocabulary] = {}


def _vocabulary(path: Path) -> Vocabulary:
    found = _VOCABULARIES.get(path)
    if found is None:
        found = _VOCABULARIES[path] = Vocabulary(list(read_traces(path)))
    return found


_NAMES = st.text(string.ascii_lowercase + "_", min_size=3, max_size=10)


def _tools(vocabulary: Vocabulary) -> st.SearchStrategy[str]:
    """A tool of the fixture, mostly; sometimes one it never called."""
    if not vocabulary.tools:
        return _NAMES
    return st.one_of(st.sampled_from(vocabulary.tools), st.sampled_from(vocabulary.tools), _NAMES)


@st.composite
def random_case(draw: st.DrawFn, vocabulary: Vocabulary, number: int) -> dict[str, Any]:
    tools = _tools(vocabulary)
    case: dict[str, Any] = {"id": f"case-{number}"}
    if vocabulary.agents and draw(st.booleans()):
        case["match"] = {"agent_name": draw(st.sampled_from(vocabulary.agents))}
    else:
        case["match"] = "all"
    if vocabulary.words and draw(st.booleans()):
        case["expected_contains"] = draw(
            st.lists(st.sampled_from(vocabulary.words), min_size=1, max_size=2, unique=True)
        )
    if draw(st.booleans()):
        case["required_tools"] = draw(st.lists(tools, min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        case["forbidden_tools"] = draw(st.lists(tools, min_size=1, max_size=2, unique=True))
    if draw(st.booleans()):
        case["required_tool_order"] = draw(st.lists(tools, min_size=2, max_size=3, unique=True))
    if vocabulary.arguments and draw(st.booleans()):
        tool = draw(st.sampled_from(sorted(vocabulary.arguments)))
        known = vocabulary.arguments[tool]
        keys = draw(st.lists(st.sampled_from(sorted(known)), min_size=1, max_size=2, unique=True))
        case["required_tool_arguments"] = {tool: keys}
        expected = {key: known[key] for key in keys}
        if draw(st.booleans()):  # a value the call did not get
            expected[keys[0]] = draw(st.sampled_from(["other", 0, 1.5, True]))
        case["expected_tool_arguments"] = {tool: expected}
    if draw(st.booleans()):
        case["max_tool_calls"] = draw(st.integers(0, 6))
    evaluators = []
    for name in draw(st.lists(st.sampled_from(_SCORERS), max_size=3, unique=True)):
        evaluator: dict[str, Any] = {"name": name}
        if name == "max_tool_calls":
            evaluator["config"] = {"max": draw(st.integers(0, 6))}
        elif name == "trajectory_match":
            evaluator["config"] = {
                "expected": draw(st.lists(tools, min_size=1, max_size=4)),
                "mode": draw(st.sampled_from(["exact", "in_order", "any_order"])),
            }
        if draw(st.booleans()):
            evaluator["threshold"] = draw(st.sampled_from([0.5, 1.0]))
        if draw(st.integers(0, 4)) == 0:
            evaluator["required"] = False
        evaluators.append(evaluator)
    if evaluators:
        case["evaluators"] = evaluators
    if case.keys() <= {"id", "match"}:  # a case must expect something
        case["required_tools"] = [draw(tools)]
    return case


@st.composite
def random_suite(draw: st.DrawFn, vocabulary: Vocabulary) -> TestSuite:
    cases = [draw(random_case(vocabulary, n)) for n in range(draw(st.integers(1, 3)))]
    return TestSuite.from_dict({"name": "random", "version": "1", "cases": cases})


def in_memory_rows(suite: TestSuite, path: Path) -> list[CaseResult]:
    """The object path in memory: each trace's matching cases evaluated, labelled as the batch
    pass labels them."""
    plans = CasePlans()
    redaction = redaction_from_env()
    rows: list[CaseResult] = []
    for trace in read_traces(path):
        cases = suite.cases_for(trace)
        by_id = {case.id: case for case in cases}
        for row in evaluate_cases(cases, trace, redaction=redaction, plans=plans):
            row.label = row_label(by_id[row.case_id], trace, suite)
            rows.append(row)
    return rows


def _reports(suite: TestSuite, rows: list[CaseResult]) -> list[str]:
    report = EvaluationReport.from_results(suite, rows)
    return [render(report) for render in _RENDERERS]


def _seen(rows: list[CaseResult]) -> list[str]:
    return [repr(row) for row in rows]  # every field of every score (NaN equal to NaN)


_PATHS = [path for path in fixture_paths() if path.suffix != ".csv"]


@pytest.mark.parametrize("path", [pytest.param(p, id=fixture_name(p)) for p in _PATHS])
@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_suites_give_the_same_rows_every_way(
    path: Path, data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = data.draw(random_suite(_vocabulary(path)))
    with reading_with(monkeypatch, core.PYTHON):
        want = in_memory_rows(suite, path)
    which = core.CORE if HAVE_CORE else core.PYTHON
    with reading_with(monkeypatch, which):
        kept = run_batch(suite, [str(path)], workers=1, spill_rows=None)
        with run_batch(suite, [str(path)], workers=1, spill_rows=0, chunk_bytes=4096) as spilled:
            ways = {"kept": list(kept.results), "spilled": list(spilled.results)}
    # ``read_traces`` hands out a trace when it is complete, the batch pass in order of first
    # appearance: the rows in memory are put in the batch pass's order before comparing
    order = {_key(row): n for n, row in enumerate(ways["kept"])}
    assert sorted(order) == sorted(_key(row) for row in want)
    want.sort(key=lambda row: order[_key(row)])
    want_reports = _reports(suite, want)
    for way, rows in ways.items():
        assert _seen(rows) == _seen(want), way
        assert _reports(suite, rows) == want_reports, way


def _key(row: CaseResult) -> tuple[str, str]:
    return (row.trace_id or "", row.case_id)


def test_random_suites_reach_every_fixture() -> None:
    """The corpus is there, and a fixture's vocabulary gives a suite something to ask."""
    assert len(_PATHS) > 100
    vocabulary = _vocabulary(next(p for p in _PATHS if "refund" in p.name))
    assert {"lookup_order", "issue_refund"} <= set(vocabulary.tools)
    assert vocabulary.arguments and vocabulary.words
