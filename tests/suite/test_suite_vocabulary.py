"""The expectation vocabulary is one table: the case model, the loader and the checks read it."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from tooltrail.checks import JudgeEvaluator, expectations, turns
from tooltrail.suite import Expect, JudgeConfig, SuiteError, TestCase, ToolCallArgs
from tooltrail.suite.fields import parse_text
from tooltrail.suite.load import CASE_KEYS, EXPECT_KEYS, suite_fields
from tooltrail.suite.vocabulary import CASE_TERMS, TURN_TERMS, Term

#: A value of each kind that asks for something.
SAMPLES: dict[str, Any] = {
    "names": ["lookup"],
    "tool_values": {"lookup": {"id": 1}},
    "tool_names": {"lookup": ["id"]},
    "count": 2,
    "measure": 5.0,
    "flag": True,
    "tool_call_args": [ToolCallArgs(tool="lookup", args={"id": 1})],
    "judge": JudgeConfig(rubric="The reply answers the question."),
    "objects": [JudgeEvaluator(rubric="The reply is polite.")],
    "tool_sources": {"refund": {"amount": {"result_of": "lookup", "path": "total"}}},
    "handoffs": {"required": ["refunds"]},
}


def test_every_term_is_a_field_of_its_model() -> None:
    case_fields = {f.name for f in fields(TestCase)}
    expect_fields = {f.name for f in fields(Expect)}
    assert {t.key for t in CASE_TERMS} <= case_fields
    assert {t.key for t in TURN_TERMS} <= expect_fields


def test_the_checks_build_exactly_the_terms_of_the_table_in_its_order() -> None:
    assert [key for key, _ in expectations.CASE_BUILDERS] == [t.key for t in CASE_TERMS]
    assert sorted(expectations._BUILD) == sorted(t.key for t in CASE_TERMS)
    assert [key for key, _ in turns.TURN_BUILDERS] == [t.key for t in TURN_TERMS]
    assert sorted(turns._BUILD) == sorted(t.key for t in TURN_TERMS)


def test_files_may_write_every_term_that_is_not_python_only() -> None:
    assert {t.key for t in CASE_TERMS if t.in_files} <= set(CASE_KEYS)
    # (and ``agent``, which scopes the expectation rather than expects anything)
    assert set(EXPECT_KEYS) == {t.key for t in TURN_TERMS if t.in_files} | {"agent"}


@pytest.mark.parametrize("term", CASE_TERMS, ids=lambda t: t.key)
def test_each_case_term_alone_is_an_expectation_with_a_check(term: Term) -> None:
    case = TestCase(id="c", **{term.key: SAMPLES[term.kind]})
    assert case.has_expectations()
    assert len(expectations.case_checks(case)) >= 1


@pytest.mark.parametrize("term", TURN_TERMS, ids=lambda t: t.key)
def test_each_turn_term_counts_alone_only_when_the_table_says_so(term: Term) -> None:
    expect = Expect(**{term.key: SAMPLES[term.kind]})
    assert expect.is_empty() is not term.alone


def test_a_case_without_expectations_names_every_term() -> None:
    with pytest.raises(SuiteError) as error:
        TestCase(id="empty")
    message = str(error.value)
    for term in CASE_TERMS:
        assert term.key in message
    assert message == (
        "case 'empty' has no expectation: set at least one of expected_contains, "
        "required_tools, forbidden_tools, required_tool_arguments, expected_tool_arguments, "
        "args_from, required_tool_order, allowed_agents, handoffs, max_turns, a budget "
        "(max_latency_ms, max_tool_calls, "
        "max_llm_calls, max_tokens, max_cost_usd), evaluators or turns[].expect"
    )


def test_the_loader_reads_each_kind_strictly() -> None:
    text = (
        "name: s\nprices: {m: {input: 1, output: 1}}\ncases:\n  - id: c\n"
        "    expected_contains: [ok]\n    required_tool_arguments: {lookup: [id]}\n"
        "    expected_tool_arguments: {lookup: {id: 1}}\n    max_turns: 2\n"
        "    max_tool_calls: 0\n    max_cost_usd: 0.5\n"
        "    turns:\n      - user: hi\n        expect:\n          tool_calls_include: [a]\n"
        "          tool_calls_ordered: true\n          max_latency_ms: 10\n"
    )
    data, reader = parse_text(text, "suite.yaml")
    (case,) = suite_fields(data, reader)["cases"]
    assert case.required_tool_arguments == {"lookup": ["id"]}
    assert case.expected_tool_arguments == {"lookup": {"id": 1}}
    assert (case.max_turns, case.max_tool_calls, case.max_cost_usd) == (2, 0, 0.5)
    assert case.turns[0].expect.tool_calls_ordered is True
    assert case.turns[0].expect.max_latency_ms == 10.0
    bad, reader = parse_text(text.replace("max_turns: 2", "max_turns: 0"), "suite.yaml")
    with pytest.raises(SuiteError, match=r"cases\[0\]\.max_turns: must be at least 1, got 0"):
        suite_fields(bad, reader)
