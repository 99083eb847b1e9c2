"""The seed's checks on real recorded traces: every framework's refund and booking runs, read
from the corpus dumps by tooltrail's converter, get the verdicts the story says they should."""

import pytest
from fixtures import CORPUS, refund_test_case

from tooltrail import (
    Expect,
    TestCase,
    ToolCallArgs,
    Turn,
    evaluate_trace,
)
from tooltrail.convert import read_traces

WITH_ARGS = [
    "google-adk",
    "mlflow-genai-semconv",
    "pydantic-ai",
    "pydantic-ai-logfire",
    "strands",
    "strands-latest-semconv",
    "traceloop",
    "vercel-ai",
]
#: Frameworks whose two-turn booking traces share a conversation id.
LINKED = [f for f in WITH_ARGS if f != "mlflow-genai-semconv"]

REFUND = refund_test_case(name=None, match=None)
BOOKING = TestCase(
    id="booking",
    turns=[
        Turn(
            "",
            Expect(
                tool_calls_include=["create_booking"],
                tool_calls_args=[ToolCallArgs("create_booking", {"time": "10am"})],
            ),
        ),
        Turn(
            "", Expect(tool_calls_include=["update_booking"], tool_calls_exclude=["create_booking"])
        ),
    ],
)


def one(framework, scenario, group="trace"):
    (trace,) = read_traces(str(CORPUS / framework / f"{scenario}.otlp.jsonl"), group=group)
    return trace


def failed(result):
    return [s.name for s in result.failures]


@pytest.mark.parametrize("framework", WITH_ARGS)
def test_the_correct_refund_passes(framework):
    assert failed(evaluate_trace(REFUND, one(framework, "a_refund_ok"))) == []


@pytest.mark.parametrize("framework", WITH_ARGS)
def test_skipping_verification_fails_required_tool_and_order(framework):
    result = evaluate_trace(REFUND, one(framework, "b_refund_skip_verify"))
    assert failed(result) == ["required_tool:verify_identity", "tool_order"]


@pytest.mark.parametrize("framework", WITH_ARGS)
def test_the_wrong_amount_is_caught_in_the_arguments_and_the_reply(framework):
    trace = one(framework, "c_refund_wrong_amount")
    result = evaluate_trace(REFUND, trace)
    assert failed(result) == ["contains:$49.99", "tool_arg_values:issue_refund"]
    (arg_score,) = [s for s in result.failures if s.metric == "tool_arg_values"]
    refund_calls = [c for c in trace.tool_calls if c.name == "issue_refund"]
    assert arg_score.explanation == (
        f"Tool 'issue_refund' was called with {[c.args for c in refund_calls]}, "
        "not {'order_id': 'ORD-7731', 'amount': 49.99}."
    )
    assert "499.9" in arg_score.explanation
    assert arg_score.span_ids == tuple(c.span_id for c in refund_calls)


@pytest.mark.parametrize("framework", WITH_ARGS)
def test_the_loop_points_at_each_repeated_lookup(framework):
    trace = one(framework, "d_loop_web_search")
    (redundancy,) = [
        s for s in evaluate_trace(REFUND, trace).scores if s.metric == "no_redundant_tool_calls"
    ]
    lookups = [c.span_id for c in trace.tool_calls if c.name == "lookup_order"]
    assert redundancy.explanation == "2/4 tool calls exactly duplicated an earlier call."
    assert redundancy.span_ids == tuple(lookups[1:])


def test_a_recording_without_content_gets_no_verdict_on_its_calls():
    """google-adk-default-nocontent: tool spans without arguments and no reply. Every check
    that reads the calls, and the reply check, gives the "content not captured" error score,
    never a FAIL (it was "called with [None]", a FAIL, before)."""
    result = evaluate_trace(REFUND, one("google-adk-default-nocontent", "a_refund_ok"))
    reason = (
        "Content not captured: 3 of 3 tool calls have no recorded arguments; this check reads "
        "the tool calls and gives no verdict."
    )
    assert [s.metric for s in result.scores] == [
        "contains", "contains", "required_tool", "required_tool", "required_tool",
        "tool_arg_values", "tool_order", "tool_call_precision", "no_redundant_tool_calls",
    ]  # fmt: skip
    for score in result.scores:
        assert (score.passed, score.value, score.error) == (False, 0.0, "ContentNotCaptured")
        assert score.explanation == reason
    (arg_score,) = [s for s in result.scores if s.metric == "tool_arg_values"]
    assert arg_score.name == "tool_arg_values:issue_refund"


@pytest.mark.parametrize("framework", LINKED)
def test_the_good_booking_conversation_passes_both_turns(framework):
    assert (
        failed(evaluate_trace(BOOKING, one(framework, "e_booking_multiturn_ok", "conversation")))
        == []
    )


@pytest.mark.parametrize("framework", LINKED)
def test_the_second_booking_is_caught_in_turn_two(framework):
    result = evaluate_trace(BOOKING, one(framework, "e_booking_multiturn_bad", "conversation"))
    assert result.failure_messages() == [
        "turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called"
    ]
