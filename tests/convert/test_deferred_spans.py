"""``EvalTrace.spans`` of a converted trace is made when first read: every reader sees the spans
the converter used to make eagerly, with the calls' values as converted."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from tooltrail import model
from tooltrail.convert import to_eval_trace
from tooltrail.model import EvalSpan, EvalTrace, ToolCall
from tooltrail.otlp.decode.span import STATUS_ERROR, Span

T = "abababababababababababababababab"
MS = 1_000_000


def _span(
    span_id: str, parent: str, name: str, start: int, attrs: dict[str, Any], **kw: Any
) -> Span:
    return Span(
        trace_id=T,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start * MS,
        end_ns=(start + 5) * MS,
        attributes=attrs,
        events=[],
        resource={"service.name": "shop"},
        **kw,
    )


def _trace() -> EvalTrace:
    """An agent that looks an order up (with a call id), then fails to refund it."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
    lookup = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.arguments": '{"order_id": "ORD-1"}',
        "gen_ai.tool.call.id": "call-1",
    }
    refund = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "issue_refund",
        "gen_ai.tool.call.arguments": '{"amount": 5}',
    }
    spans = [
        _span("a000000000000001", "", "invoke_agent shop", 0, agent),
        _span("b000000000000002", "a000000000000001", "execute_tool lookup_order", 10, lookup),
        _span(
            "c000000000000003", "a000000000000001", "execute_tool issue_refund", 20, refund,
            status_code=STATUS_ERROR, status_message="card declined",
        ),
    ]  # fmt: skip
    return to_eval_trace(spans)


#: The spans of ``_trace``, written out by hand.
EXPECTED = [
    EvalSpan(
        tool_name="lookup_order",
        attributes={
            "tool_status": "unset",
            "turn": 1,
            "source": "genai:gen_ai.tool.call.arguments",
            "tool_args": {"order_id": "ORD-1"},
            "tool_call_id": "call-1",
            "agent": "shop",
        },
        name="execute_tool lookup_order",
        span_id="b000000000000002",
        parent_span_id="a000000000000001",
        start_ns=10 * MS,
        end_ns=15 * MS,
        status="unset",
    ),
    EvalSpan(
        tool_name="issue_refund",
        attributes={
            "tool_status": "error",
            "turn": 1,
            "source": "genai:gen_ai.tool.call.arguments",
            "tool_args": {"amount": 5},
            "tool_error": "card declined",
            "agent": "shop",
        },
        name="execute_tool issue_refund",
        span_id="c000000000000003",
        parent_span_id="a000000000000001",
        start_ns=20 * MS,
        end_ns=25 * MS,
        status="error",
    ),
]


def test_no_span_is_made_until_spans_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str | None] = []

    class Counted(EvalSpan):
        __slots__ = ()

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self.tool_name)

    monkeypatch.setattr(model, "EvalSpan", Counted)
    trace = _trace()
    assert [call.name for call in trace.tool_calls] == ["lookup_order", "issue_refund"]
    assert made == []
    spans = trace.spans
    assert made == ["lookup_order", "issue_refund"]
    assert trace.spans is spans  # made once, then kept
    assert made == ["lookup_order", "issue_refund"]


def test_every_reader_sees_the_spans() -> None:
    assert _trace().spans == EXPECTED
    assert _trace() == _trace()
    assert "execute_tool issue_refund" in repr(_trace())
    assert dataclasses.asdict(_trace())["spans"][1]["attributes"]["tool_error"] == "card declined"
    assert dataclasses.replace(_trace(), output="x").spans == EXPECTED
    assert pickle.loads(pickle.dumps(_trace())).spans == EXPECTED
    assert copy.deepcopy(_trace()).spans == EXPECTED
    assert copy.copy(_trace()).spans == EXPECTED
    hand_built = EvalTrace("t", spans=list(EXPECTED))
    assert hand_built.spans == EXPECTED
    assert [call.name for call in hand_built.tool_calls] == ["lookup_order", "issue_refund"]


def test_spans_hold_the_calls_as_converted() -> None:
    """A caller that changes a call before reading the spans (the pytest plugin renumbers
    turns) still reads the spans as converted, as when they were made eagerly."""
    trace = _trace()
    trace.tool_calls[0].turn = 7
    trace.tool_calls[1] = ToolCall(name="other")
    assert trace.spans == EXPECTED


def test_spans_can_be_replaced_before_and_after_they_are_read() -> None:
    trace = _trace()
    trace.spans = []
    assert trace.spans == []
    trace = _trace()
    assert trace.spans == EXPECTED
    trace.spans = EXPECTED[:1]
    assert trace.spans == EXPECTED[:1]
