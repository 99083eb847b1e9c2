"""Per-turn expectations (pytest-agent-eval's Expect): each turn sees only its own calls."""

import json

import pytest
from fixtures import CORPUS

from tooltrail import (
    EvalTrace,
    Expect,
    SuiteError,
    TestCase,
    ToolCall,
    ToolCallArgs,
    Turn,
    evaluate_trace,
)
from tooltrail.checks import is_subsequence


def conversation(scenario: str) -> EvalTrace:
    """The ground-truth calls of a two-turn corpus conversation, each with its turn."""
    truth = json.loads((CORPUS / "pydantic-ai" / f"{scenario}.truth.json").read_text("utf-8"))
    calls = [
        ToolCall(name=c["tool"], args=c["args"], span_id=c["call_id"], turn=t["turn"])
        for t in truth["traces"]
        for c in t["calls"]
    ]
    return EvalTrace("conv", tool_calls=calls, metadata={"turn_count": truth["turn_count"]})


BOOKING = TestCase(
    id="booking",
    turns=[
        Turn(
            "Book 10am",
            Expect(
                tool_calls_include=["create_booking"],
                tool_calls_args=[ToolCallArgs("create_booking", {"time": "10am"})],
            ),
        ),
        Turn(
            "Make it 11am",
            Expect(
                tool_calls_include=["update_booking"],
                tool_calls_exclude=["create_booking"],
                tool_calls_args=[ToolCallArgs("update_booking", {"time": "11am"})],
            ),
        ),
    ],
)


def test_a_good_conversation_passes_every_turn():
    result = evaluate_trace(BOOKING, conversation("e_booking_multiturn_ok"))
    assert result.passed
    assert [s.name for s in result.scores] == [
        "turn1:tool_calls_include:create_booking",
        "turn1:tool_calls_args:create_booking",
        "turn2:tool_calls_include:update_booking",
        "turn2:tool_calls_exclude:create_booking",
        "turn2:tool_calls_args:update_booking",
    ]
    assert [s.turn for s in result.scores] == [1, 1, 2, 2, 2]


def test_a_second_booking_in_turn_two_fails_with_the_turn_named():
    result = evaluate_trace(BOOKING, conversation("e_booking_multiturn_bad"))
    assert not result.passed
    (failure,) = result.failures
    assert failure.name == "turn2:tool_calls_exclude:create_booking"
    assert failure.metric == "tool_calls_exclude"
    assert failure.explanation == "Forbidden tool 'create_booking' was called"
    assert failure.turn == 2
    assert failure.span_ids == ("call_t2_s2_1",)
    assert result.failure_messages() == [
        "turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called"
    ]


def test_a_turn_reports_every_failure_it_finds():
    trace = EvalTrace("t", tool_calls=[ToolCall("create_booking", {"time": "9am"}, turn=1)])
    case = TestCase(
        id="c",
        turns=[
            Turn(
                "",
                Expect(
                    tool_calls_include=["create_booking", "send_email"],
                    tool_calls_exclude=["create_booking"],
                    tool_calls_args=[ToolCallArgs("create_booking", {"time": "10am"})],
                ),
            )
        ],
    )
    failures = evaluate_trace(case, trace).failure_messages()
    assert failures == [
        "turn1:tool_calls_include:send_email: Expected tool 'send_email' was not called",
        "turn1:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called",
        "turn1:tool_calls_args:create_booking: No call of 'create_booking' matched "
        "{'time': '10am'} (subset); its calls had [{'time': '9am'}]",
    ]


def test_calls_of_another_turn_do_not_count():
    trace = EvalTrace("t", tool_calls=[ToolCall("a", {}, turn=2)])
    case = TestCase(id="c", turns=[Turn("", Expect(tool_calls_include=["a"]))])
    (s,) = evaluate_trace(case, trace).scores
    assert not s.passed
    assert s.explanation == "Expected tool 'a' was not called"


def test_include_passes_when_the_tool_was_called():
    trace = EvalTrace("t", tool_calls=[ToolCall("a", {}, span_id="x")])
    case = TestCase(id="c", turns=[Turn("", Expect(tool_calls_include=["a"]))])
    (s,) = evaluate_trace(case, trace).scores
    assert (s.passed, s.explanation, s.span_ids) == (True, "Tool 'a' was called", ("x",))


def test_exclude_passes_when_the_tool_was_not_called():
    case = TestCase(id="c", turns=[Turn("", Expect(tool_calls_exclude=["a"]))])
    (s,) = evaluate_trace(case, EvalTrace("t")).scores
    assert (s.passed, s.explanation) == (True, "Forbidden tool 'a' was not called")


def test_ordered_is_a_subsequence_where_each_needle_consumes_a_call():
    assert is_subsequence(["a", "b"], ["b", "a", "b"])
    assert not is_subsequence(["a", "a"], ["a", "b"])
    assert is_subsequence(["a", "a"], ["a", "b", "a"])
    assert is_subsequence([], [])
    assert not is_subsequence(["a"], [])


def test_ordered_scores_the_include_list_in_turn_order():
    trace = EvalTrace("t", tool_calls=[ToolCall("b"), ToolCall("a")])
    case = TestCase(
        id="c", turns=[Turn("", Expect(tool_calls_include=["a", "b"], tool_calls_ordered=True))]
    )
    scores = evaluate_trace(case, trace).scores
    ordered = scores[-1]
    assert ordered.name == "turn1:tool_calls_ordered"
    assert not ordered.passed
    assert (
        ordered.explanation
        == "Tools ['a', 'b'] were not called in order; the turn's calls were ['b', 'a']"
    )
    trace = EvalTrace("t", tool_calls=[ToolCall("b"), ToolCall("a"), ToolCall("b")])
    ordered = evaluate_trace(case, trace).scores[-1]
    assert (ordered.passed, ordered.explanation) == (True, "Tools ['a', 'b'] were called in order")


def test_exact_arguments_must_equal_the_whole_dict():
    trace = EvalTrace("t", tool_calls=[ToolCall("a", {"x": 1, "y": 2})])
    subset = TestCase(
        id="c", turns=[Turn("", Expect(tool_calls_args=[ToolCallArgs("a", {"x": 1})]))]
    )
    exact = TestCase(
        id="c", turns=[Turn("", Expect(tool_calls_args=[ToolCallArgs("a", {"x": 1}, "exact")]))]
    )
    assert evaluate_trace(subset, trace).passed
    result = evaluate_trace(exact, trace)
    assert not result.passed
    assert result.scores[0].explanation == (
        "No call of 'a' matched {'x': 1} (exact); its calls had [{'x': 1, 'y': 2}]"
    )
    both = TestCase(
        id="c",
        turns=[Turn("", Expect(tool_calls_args=[ToolCallArgs("a", {"y": 2.0, "x": 1}, "exact")]))],
    )
    assert evaluate_trace(both, trace).passed


def test_arguments_of_a_tool_not_called_explain_so():
    case = TestCase(id="c", turns=[Turn("", Expect(tool_calls_args=[ToolCallArgs("a", {"x": 1})]))])
    (s,) = evaluate_trace(case, EvalTrace("t")).scores
    assert s.explanation == "Tool 'a' was not called, so {'x': 1} (subset) could not match"


def test_an_unknown_argument_mode_is_an_error():
    with pytest.raises(SuiteError, match="mode"):
        ToolCallArgs("a", {}, mode="superset")


def test_a_case_whose_turns_expect_nothing_is_an_error():
    with pytest.raises(SuiteError, match="no expectation"):
        TestCase(id="c", turns=[Turn("hello")])


def test_expect_accepts_argument_checks_written_as_mappings():
    expect = Expect(tool_calls_args=[{"tool": "a", "args": {"x": 1}, "mode": "exact"}])
    assert expect.tool_calls_args == [ToolCallArgs("a", {"x": 1}, "exact")]


def test_a_turn_without_expect_expects_nothing():
    assert Turn("hi", None).expect.is_empty()


def test_a_tool_list_given_as_a_string_is_an_error():
    with pytest.raises(SuiteError, match="must be a list"):
        Expect(tool_calls_include="create_booking")
