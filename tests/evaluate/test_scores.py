"""Scores -> evaluation events: which span each verdict points at, and what it says.

Traces are real ADK runs from the corpus (tests/data/corpus/google-adk), evaluated with the
seed's refund checks by tooltrail's own engine.
"""

from __future__ import annotations

import pytest
from fixtures import CORPUS, refund_test_case

from tooltrail import EvalSpan, EvalTrace, EvaluatorConfig, Score, TestCase, evaluate_trace
from tooltrail.convert import read_traces
from tooltrail.results import CaseResult
from tooltrail.scores import (
    CASE_SCORE_NAME,
    EventOptions,
    attach_evaluations,
    evaluation_events,
    evaluation_from_record,
)

ADK = CORPUS / "google-adk"

REFUND = refund_test_case(match=None)


def corpus_trace(scenario: str, group: str = "trace") -> EvalTrace:
    [trace] = read_traces([ADK / f"{scenario}.otlp.jsonl"], group=group)
    return trace


def events_named(events, name):
    return [e for e in events if e.attributes["gen_ai.evaluation.name"] == name]


def call_span(trace: EvalTrace, tool: str, **args) -> str:
    [span_id] = [
        c.span_id
        for c in trace.tool_calls
        if c.name == tool and all(c.args.get(k) == v for k, v in args.items())
    ]
    return span_id


def test_wrong_amount_event_points_at_the_mismatching_refund_call():
    trace = corpus_trace("c_refund_wrong_amount")
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)])
    [event] = events_named(events, "tool_arg_values:issue_refund")
    assert event.trace_id == "e562ea0902561c76b362a32db16b4bd3"
    assert event.span_id == call_span(trace, "issue_refund", amount=499.9) == "0a8a013a65f28cce"
    assert event.attributes["gen_ai.evaluation.score.value"] == 0.0
    assert event.attributes["gen_ai.evaluation.score.label"] == "fail"
    assert event.attributes["tooltrail.metric"] == "tool_arg_values"
    assert event.attributes["tooltrail.case_id"] == "refund"


def test_each_duplicate_call_gets_its_own_redundancy_event():
    trace = corpus_trace("d_loop_web_search")
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)])
    redundant = events_named(events, "no_redundant_tool_calls")
    lookups = [c.span_id for c in trace.tool_calls if c.name == "lookup_order"]
    assert [e.span_id for e in redundant] == lookups[1:]
    assert {e.attributes["gen_ai.evaluation.score.label"] for e in redundant} == {"fail"}


def test_a_call_outside_the_allowed_set_is_where_precision_fails():
    trace = corpus_trace("d_loop_web_search")
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)])
    [event] = events_named(events, "tool_call_precision")
    assert event.span_id == call_span(trace, "web_search")
    assert event.attributes["gen_ai.evaluation.score.value"] == pytest.approx(3 / 4)


def test_a_forbidden_call_event_points_at_that_call():
    trace = corpus_trace("d_loop_web_search")
    case = TestCase(id="no-web", forbidden_tools=["web_search"])
    [event] = events_named(
        evaluation_events(trace, [evaluate_trace(case, trace)]), "forbidden_tool:web_search"
    )
    assert event.span_id == call_span(trace, "web_search")


def test_a_missing_tool_is_judged_on_the_agent_span():
    trace = corpus_trace("b_refund_skip_verify")
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)])
    [event] = events_named(events, "required_tool:verify_identity")
    assert event.span_id == trace.metadata["agent_span_ids"][0] == "4d775739099267d8"
    assert event.attributes["gen_ai.evaluation.score.label"] == "fail"


def test_the_case_verdict_goes_on_the_root_span_with_the_failed_score_names():
    trace = corpus_trace("b_refund_skip_verify")
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)])
    [verdict] = events_named(events, CASE_SCORE_NAME)
    assert verdict is events[-1]
    assert (verdict.trace_id, verdict.span_id) == (trace.trace_id, "1a026517e680cb2d")
    assert verdict.attributes["gen_ai.evaluation.score.value"] == 0.0
    assert verdict.attributes["gen_ai.evaluation.score.label"] == "fail"
    assert verdict.attributes["tooltrail.failed_scores"] == [
        "required_tool:verify_identity",
        "tool_order",
    ]
    assert (verdict.severity_number, verdict.severity_text) == (13, "WARN")


def test_a_passing_case_verdict_is_a_pass_at_info_severity():
    trace = corpus_trace("a_refund_ok")
    result = evaluate_trace(REFUND, trace, output="Your refund of $49.99 for order ORD-7731.")
    [verdict] = events_named(evaluation_events(trace, [result]), CASE_SCORE_NAME)
    assert verdict.attributes["gen_ai.evaluation.score.value"] == 1.0
    assert verdict.attributes["gen_ai.evaluation.score.label"] == "pass"
    assert verdict.attributes["tooltrail.failed_scores"] == []
    assert (verdict.severity_number, verdict.severity_text) == (9, "INFO")


def test_every_event_shares_the_judged_trace_id():
    trace = corpus_trace("d_loop_web_search")
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)])
    assert {e.trace_id for e in events} == {trace.trace_id}


def test_explanations_are_absent_by_default():
    trace = corpus_trace("c_refund_wrong_amount")
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)])
    assert all("gen_ai.evaluation.explanation" not in e.attributes for e in events)
    assert not any("499.9" in repr(e.attributes) for e in events)


def test_explanations_are_the_score_texts_when_enabled():
    trace = corpus_trace("c_refund_wrong_amount")
    options = EventOptions(explanations=True)
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)], options=options)
    [event] = events_named(events, "tool_arg_values:issue_refund")
    assert event.attributes["gen_ai.evaluation.explanation"] == (
        "Tool 'issue_refund' was called with [{'order_id': 'ORD-7731', 'amount': 499.9}], "
        "not {'order_id': 'ORD-7731', 'amount': 49.99}."
    )


def test_suite_name_is_added_when_known():
    trace = corpus_trace("a_refund_ok")
    events = evaluation_events(
        trace, [evaluate_trace(REFUND, trace)], options=EventOptions(suite="refund-agent")
    )
    assert {e.attributes["tooltrail.suite"] for e in events} == {"refund-agent"}


def test_a_failed_scorer_carries_its_error_type():
    trace = corpus_trace("a_refund_ok")
    case = TestCase(id="bad", evaluators=[EvaluatorConfig(name="tool_call_precision")])
    events = evaluation_events(trace, [evaluate_trace(case, trace)])
    [event] = events_named(events, "tool_call_precision")
    assert event.attributes["error.type"] == "ConfigError"
    assert event.attributes["gen_ai.evaluation.score.label"] == "fail"


def test_skipped_scores_produce_no_event():
    trace = corpus_trace("a_refund_ok")
    skipped = Score("custom", "custom", 0.0, False, "not applicable", skipped=True)
    result = CaseResult("c", True, [skipped], trace.trace_id)
    assert [e.evaluation_name for e in evaluation_events(trace, [result])] == [CASE_SCORE_NAME]


def test_a_score_that_does_not_decide_the_case_says_so():
    trace = corpus_trace("a_refund_ok")
    advisory = Score("custom", "custom", 0.0, False, "advice", required=False)
    result = CaseResult("c", True, [advisory], trace.trace_id)
    [event, verdict] = evaluation_events(trace, [result])
    assert event.attributes["tooltrail.required"] is False
    assert verdict.attributes["tooltrail.failed_scores"] == []


def test_case_verdicts_can_be_left_out():
    trace = corpus_trace("a_refund_ok")
    options = EventOptions(case_verdicts=False)
    events = evaluation_events(trace, [evaluate_trace(REFUND, trace)], options=options)
    assert CASE_SCORE_NAME not in {e.evaluation_name for e in events}


def test_conversation_calls_point_into_the_trace_of_their_turn():
    conversation = corpus_trace("e_booking_multiturn_bad", group="conversation")
    first, second = conversation.metadata["trace_ids"]
    case = TestCase(id="booking", forbidden_tools=["create_booking"])
    events = evaluation_events(conversation, [evaluate_trace(case, conversation)])
    forbidden = events_named(events, "forbidden_tool:create_booking")
    assert [(e.trace_id, e.span_id) for e in forbidden] == [
        (first, "e79d6da56f175898"),
        (second, "f5c448ac46c0ac66"),
    ]
    [verdict] = events_named(events, CASE_SCORE_NAME)
    assert (verdict.trace_id, verdict.span_id) == (first, "5db35b4bc1c2617c")


def test_hand_built_traces_give_events_without_span_context():
    trace = EvalTrace("trace-correct", spans=[EvalSpan(tool_name="lookup_order")])
    case = TestCase(id="refund", required_tools=["lookup_order"])
    events = evaluation_events(trace, [evaluate_trace(case, trace)])
    assert [(e.trace_id, e.span_id) for e in events] == [("", ""), ("", "")]
    assert events[0].attributes["tooltrail.case_id"] == "refund"


class Record:
    """A log record as tooltrail.otlp.read_log_records returns it (duck type)."""

    def __init__(self, trace_id, span_id, event_name, attributes, time_ns=1):
        self.trace_id, self.span_id, self.time_ns = trace_id, span_id, time_ns
        self.event_name, self.attributes = event_name, attributes


def test_evaluation_events_are_attached_to_the_trace_they_name():
    ok, wrong = corpus_trace("a_refund_ok"), corpus_trace("c_refund_wrong_amount")
    records = [
        Record(
            wrong.trace_id,
            "0a8a013a65f28cce",
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": "relevance",
                "gen_ai.evaluation.score.value": 0.25,
                "gen_ai.evaluation.score.label": "fail",
            },
        ),
        Record(wrong.trace_id, "0a8a013a65f28cce", "some.other.event", {"x": 1}),
        Record("f" * 32, "1" * 16, "gen_ai.evaluation.result", {"gen_ai.evaluation.name": "x"}),
    ]
    assert attach_evaluations([ok, wrong], records) == 1
    assert ok.evaluations == []
    [evaluation] = wrong.evaluations
    assert evaluation["name"] == "relevance"
    assert evaluation["value"] == 0.25
    assert evaluation["label"] == "fail"
    assert evaluation["span_id"] == "0a8a013a65f28cce"


def test_events_named_by_an_attribute_count_as_evaluations():
    record = Record(
        "a" * 32,
        "b" * 16,
        "",
        {
            "event.name": "gen_ai.evaluation.result",
            "gen_ai.evaluation.name": "groundedness",
            "gen_ai.evaluation.score.value": 1,
        },
    )
    evaluation = evaluation_from_record(record)
    assert evaluation is not None
    assert evaluation["value"] == 1.0
    assert evaluation["label"] is None


def test_conversation_evaluations_collect_events_of_every_turn():
    conversation = corpus_trace("e_booking_multiturn_bad", group="conversation")
    first, second = conversation.metadata["trace_ids"]
    records = [
        Record(tid, "1" * 16, "gen_ai.evaluation.result", {"gen_ai.evaluation.name": n})
        for tid, n in ((first, "turn-one"), (second, "turn-two"))
    ]
    attach_evaluations([conversation], records)
    assert [e["name"] for e in conversation.evaluations] == ["turn-one", "turn-two"]
