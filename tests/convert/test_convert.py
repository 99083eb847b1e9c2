"""Spans -> EvalTrace: order, nesting, failed attempts, turns, conversations, model-side calls."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tooltrail.convert import TraceFacts, build_eval_trace, group_spans, to_eval_trace
from tooltrail.otlp.decode.span import STATUS_ERROR, STATUS_OK, Span, SpanEvent

T1 = "11111111111111111111111111111111"
T2 = "22222222222222222222222222222222"
MS = 1_000_000
RESOURCE = {"service.name": "shop"}


def sp(
    span_id: str,
    parent: str = "",
    name: str = "",
    start: int = 0,
    end: int = 0,
    attrs: dict[str, Any] | None = None,
    *,
    trace: str = T1,
    status: int = 0,
    message: str = "",
    events: list[SpanEvent] | None = None,
) -> Span:
    return Span(
        trace_id=trace,
        span_id=span_id.ljust(16, "0"),
        parent_span_id=parent.ljust(16, "0") if parent else "",
        name=name,
        start_ns=start * MS,
        end_ns=(end or start + 1) * MS,
        status_code=status,
        status_message=message,
        attributes=attrs or {},
        events=events or [],
        resource=RESOURCE,
    )


def agent(
    span_id: str, parent: str = "", start: int = 0, end: int = 100, name: str = "shop", **kw: Any
) -> Span:
    attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name,
        **kw.pop("attrs", {}),
    }
    return sp(span_id, parent, f"invoke_agent {name}", start, end, attrs, **kw)


def tool(
    span_id: str,
    parent: str,
    tool_name: str,
    start: int,
    end: int = 0,
    args: str | None = "{}",
    call_id: str | None = None,
    **kw: Any,
) -> Span:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool_name}
    if args is not None:
        attrs["gen_ai.tool.call.arguments"] = args
    if call_id is not None:
        attrs["gen_ai.tool.call.id"] = call_id
    attrs.update(kw.pop("attrs", {}))
    return sp(span_id, parent, f"execute_tool {tool_name}", start, end, attrs, **kw)


def model(span_id: str, parent: str, start: int, end: int, output: str, **kw: Any) -> Span:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}
    return sp(span_id, parent, "chat m", start, end, attrs, **kw)


def names(spans: list[Span]) -> list[str]:
    return [c.name for c in to_eval_trace(spans).tool_calls]


def test_calls_are_ordered_by_start_time_whatever_order_spans_arrive_in() -> None:
    spans = [
        agent("a"),
        tool("t3", "a", "c", 30),
        tool("t1", "a", "a", 10),
        tool("t2", "a", "b", 20),
    ]
    for seed in range(5):
        random.Random(seed).shuffle(spans)
        assert names(spans) == ["a", "b", "c"]


def test_equal_start_times_fall_back_to_span_id() -> None:
    spans = [agent("a"), tool("f2", "a", "second", 10), tool("e1", "a", "first", 10)]
    assert names(spans) == ["first", "second"]


def test_duplicate_span_ids_keep_the_first_copy() -> None:
    first = tool("t1", "a", "lookup", 10, args='{"id": 1}')
    retry = tool("t1", "a", "lookup", 10, args='{"id": 2}')
    trace = to_eval_trace([agent("a"), first, retry])
    assert [c.args for c in trace.tool_calls] == [{"id": 1}]
    assert trace.metadata["span_count"] == 2


def test_failed_attempt_is_kept_with_error_status_and_exception_message() -> None:
    failed = tool(
        "t1",
        "a",
        "refund",
        10,
        status=STATUS_ERROR,
        message="RuntimeError",
        events=[SpanEvent("exception", 0, {"exception.message": "gateway timeout"})],
    )
    retried = tool("t2", "a", "refund", 20, status=STATUS_OK)
    trace = to_eval_trace([agent("a"), failed, retried])
    assert [(c.status, c.error) for c in trace.tool_calls] == [
        ("error", "gateway timeout"),
        ("ok", None),
    ]
    assert trace.metadata["error_span_ids"] == [failed.span_id]


def test_arguments_not_captured_stay_none_and_distinct_from_empty() -> None:
    trace = to_eval_trace(
        [agent("a"), tool("t1", "a", "x", 10, args=None), tool("t2", "a", "y", 20)]
    )
    assert [c.args for c in trace.tool_calls] == [None, {}]
    assert "tool_args" not in trace.spans[0].attributes
    assert trace.spans[1].attributes["tool_args"] == {}


def test_nested_tool_span_of_the_same_call_collapses_into_the_outermost() -> None:
    outer = tool("t1", "a", "lookup", 10, 40, args=None, call_id="c1")
    client = tool("t2", "t1", "lookup", 11, 39, args=None)
    server = tool(
        "t3", "t2", "lookup", 12, 38, args='{"order": "A"}', status=STATUS_ERROR, message="db down"
    )
    trace = to_eval_trace([agent("a"), server, client, outer])
    (call,) = trace.tool_calls
    assert (call.span_id, call.call_id, call.args) == (outer.span_id, "c1", {"order": "A"})
    assert (call.status, call.error) == ("error", "db down")


def test_nested_tool_span_with_the_same_call_id_collapses_even_if_renamed() -> None:
    outer = tool("t1", "a", "lookup_order", 10, 40, call_id="c1")
    inner = tool("t2", "t1", "orders.lookup", 11, 39, call_id="c1")
    assert names([agent("a"), inner, outer]) == ["lookup_order"]


def test_tool_inside_a_different_tool_is_a_call_of_its_own() -> None:
    outer = tool("t1", "a", "plan_trip", 10, 40)
    inner = tool("t2", "t1", "search_flights", 11, 20)
    assert names([agent("a"), inner, outer]) == ["plan_trip", "search_flights"]


def test_agent_used_as_a_tool_keeps_its_own_calls_after_the_tool() -> None:
    spans = [
        agent("a", name="triage"),
        tool("t1", "a", "ask_specialist", 10, 50),
        agent("b", "t1", 11, 49, name="specialist"),
        tool("t2", "b", "ask_specialist", 20, 30),  # an agent span lies between: not collapsed
        tool("t3", "a", "close", 60),
    ]
    trace = to_eval_trace(spans)
    assert [(c.name, c.agent, c.turn) for c in trace.tool_calls] == [
        ("ask_specialist", "triage", 1),
        ("ask_specialist", "specialist", 1),
        ("close", "triage", 1),
    ]
    assert trace.metadata["turn_count"] == 1
    assert trace.metadata["agent_name"] == "triage"


def test_each_top_level_agent_invocation_is_a_turn() -> None:
    spans = [
        sp("r", "", "session", 0, 300),
        agent("a1", "r", 10, 100),
        tool("t1", "a1", "book", 20),
        agent("a2", "r", 200, 290),
        tool("t2", "a2", "rebook", 210),
    ]
    trace = to_eval_trace(spans)
    assert [(c.name, c.turn) for c in trace.tool_calls] == [("book", 1), ("rebook", 2)]
    assert trace.metadata["turn_count"] == 2
    assert trace.turn_count == 2


def test_trace_without_agent_spans_is_one_turn() -> None:
    trace = to_eval_trace([sp("r", "", "job", 0, 100), tool("t1", "r", "x", 10)])
    assert trace.metadata["turn_count"] == 1
    assert trace.tool_calls[0].turn == 1


def test_spans_of_two_traces_of_one_conversation_make_one_trajectory() -> None:
    conv = {"gen_ai.conversation.id": "conv-1"}
    spans = [
        tool("u2", "b", "rebook", 1010, trace=T2),
        agent("b", "", 1000, 1100, trace=T2, attrs=conv),
        agent("a", "", 0, 100, attrs=conv),
        tool("u1", "a", "book", 10),
    ]
    trace = to_eval_trace(spans)
    assert trace.trace_id == "conv-1"
    assert [(c.name, c.turn) for c in trace.tool_calls] == [("book", 1), ("rebook", 2)]
    assert trace.metadata["trace_ids"] == [T1, T2]
    assert trace.metadata["conversation_id"] == "conv-1"
    assert trace.metadata["turn_count"] == 2


def test_group_spans_by_trace_and_by_conversation() -> None:
    conv = {"session.id": "s-9"}
    spans = [agent("a", attrs=conv), agent("b", trace=T2, attrs=conv), agent("c", trace="3" * 32)]
    by_trace = list(group_spans(spans, "trace"))
    by_conversation = list(group_spans(spans, "conversation"))
    assert [len(g) for g in by_trace] == [1, 1, 1]
    assert sorted(len(g) for g in by_conversation) == [1, 2]
    with pytest.raises(ValueError, match="group must be one of"):
        list(group_spans(spans, "session"))  # type: ignore[arg-type]


def test_model_side_record_names_positional_arguments_and_gives_the_call_id() -> None:
    """OpenLLMetry ``@tool`` spans record the Python call; the chat span knows the names."""
    chat = model(
        "m1",
        "a",
        5,
        9,
        '[{"role": "assistant", "parts": [{"type": "tool_call", '
        '"id": "call_7", "name": "refund", "arguments": {"order_id": "A-1", "amount": 5.0}}]}]',
    )
    refund = sp(
        "t1",
        "a",
        "refund.tool",
        10,
        12,
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "refund",
            "traceloop.entity.input": '{"args": ["A-1", 5.0], "kwargs": {}}',
        },
    )
    (call,) = to_eval_trace([agent("a"), refund, chat]).tool_calls
    assert (call.args, call.call_id) == ({"order_id": "A-1", "amount": 5.0}, "call_7")
    assert call.source == "traceloop:gen_ai.output.messages"


def test_model_side_exact_number_wins_when_the_tool_span_lost_precision() -> None:
    """Vercel ``ai.toolCall.args`` is re-serialised by JavaScript (float64); the model's text in
    ``ai.response.toolCalls`` keeps 9007199254740993."""
    do_generate = sp(
        "m1",
        "a",
        "ai.generateText.doGenerate",
        5,
        9,
        {
            "ai.response.toolCalls": (
                '[{"toolCallId": "c1", "toolName": "ship", "input": "{\\"n\\": 9007199254740993}"}]'
            ),
        },
    )
    tool_call = sp(
        "t1",
        "a",
        "ai.toolCall",
        10,
        12,
        {
            "ai.toolCall.name": "ship",
            "ai.toolCall.id": "c1",
            "ai.toolCall.args": '{"n": 9007199254740992}',
        },
    )
    (call,) = to_eval_trace(
        [sp("a", "", "ai.generateText", 0, 20), do_generate, tool_call]
    ).tool_calls
    assert call.args == {"n": 9007199254740993}
    assert call.source == "vercel:ai.response.toolCalls"


def test_model_side_arguments_that_disagree_do_not_replace_what_ran() -> None:
    chat = model(
        "m1",
        "a",
        5,
        9,
        '[{"role": "assistant", "parts": [{"type": "tool_call", '
        '"id": "c1", "name": "refund", "arguments": {"amount": 499.9}}]}]',
    )
    ran = tool("t1", "a", "refund", 10, args='{"amount": 49.99}', call_id="c1")
    (call,) = to_eval_trace([agent("a"), chat, ran]).tool_calls
    assert call.args == {"amount": 49.99}
    assert call.source == "genai:gen_ai.tool.call.arguments"


def test_parallel_calls_of_one_model_response_keep_the_emission_order() -> None:
    chat = model(
        "m1",
        "a",
        5,
        9,
        '[{"role": "assistant", "parts": ['
        '{"type": "tool_call", "id": "c1", "name": "first", "arguments": {}}, '
        '{"type": "tool_call", "id": "c2", "name": "second", "arguments": {}}]}]',
    )
    spans = [
        agent("a"),
        chat,
        tool("t1", "a", "second", 10, call_id="c2"),
        tool("t2", "a", "first", 11, call_id="c1"),
    ]
    assert names(spans) == ["first", "second"]


def test_call_the_model_asked_for_without_a_tool_span_is_kept() -> None:
    chat = model(
        "m1",
        "a",
        5,
        9,
        '[{"role": "assistant", "parts": ['
        '{"type": "tool_call", "id": "c1", "name": "show_map", "arguments": {"city": "Bern"}}]}]',
    )
    trace = to_eval_trace([agent("a"), chat, tool("t2", "a", "later", 20)])
    assert [(c.name, c.args, c.source, c.span_id) for c in trace.tool_calls] == [
        ("show_map", {"city": "Bern"}, "model:gen_ai.output.messages", chat.span_id),
        ("later", {}, "genai:gen_ai.tool.call.arguments", trace.tool_calls[1].span_id),
    ]


def test_reply_is_the_agent_reply_else_the_last_model_text() -> None:
    text = '[{"role": "assistant", "parts": [{"type": "text", "content": "%s"}]}]'
    spans = [
        agent("a"),
        model("m1", "a", 5, 9, text % "thinking"),
        model("m2", "a", 50, 60, text % "Done."),
    ]
    assert to_eval_trace(spans).output == "Done."
    with_final = [agent("a", attrs={"final_result": "Refunded."}), *spans[1:]]
    assert to_eval_trace(with_final).output == "Refunded."


def test_parent_cycle_in_hostile_input_does_not_hang() -> None:
    spans = [sp("x", "y", "loop-x", 0), sp("y", "x", "loop-y", 1), tool("t1", "x", "t", 2)]
    assert names(spans) == ["t"]


def test_missing_root_makes_the_top_orphan_the_root() -> None:
    orphan = agent("a", "dead", 0, 100)
    trace = to_eval_trace([orphan, tool("t1", "a", "x", 10)])
    assert trace.metadata["root_span_id"] == orphan.span_id
    assert trace.metadata["root_span_name"] == "invoke_agent shop"


def test_metadata_holds_exactly_the_agreed_keys() -> None:
    spans = [
        agent(
            "a",
            start=5,
            end=105,
            attrs={"gen_ai.conversation.id": "c-1", "tooltrail.case_id": "case-7", "tier": "gold"},
        ),
        tool("t1", "a", "x", 10, status=STATUS_ERROR),
    ]
    meta = to_eval_trace(spans).metadata
    assert set(meta) == {
        "turn_count",
        "service.name",
        "agent_name",
        "root_span_name",
        "root_span_id",
        "trace_ids",
        "conversation_id",
        "case_id",
        "attributes",
        "total_latency_ms",
        "error_span_ids",
        "agent_span_ids",
        "span_count",
    }
    assert meta["attributes"] == {
        "service.name": "shop",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "shop",
        "gen_ai.conversation.id": "c-1",
        "tooltrail.case_id": "case-7",
        "tier": "gold",
    }
    assert meta["total_latency_ms"] == 100.0
    assert meta["agent_span_ids"] == [spans[0].span_id]


def test_trace_facts_merged_from_two_halves_equal_the_whole() -> None:
    spans = [
        agent("a"),
        tool("t1", "a", "x", 10),
        tool("t2", "a", "y", 20),
        model("m", "a", 1, 2, "[]"),
    ]
    left, right, whole = TraceFacts(T1), TraceFacts(T1), TraceFacts(T1)
    for s in spans[:2]:
        left.add(s)
    for s in spans[1:]:
        right.add(s)
    for s in spans:
        whole.add(s)
    left.merge(right)
    merged, single = build_eval_trace([left]), build_eval_trace([whole])
    assert merged.tool_calls == single.tool_calls
    assert merged.metadata == single.metadata


def test_trace_over_the_span_limit_is_partial() -> None:
    facts = TraceFacts(T1, max_spans=2)
    added = [facts.add(s) for s in (agent("a"), tool("t1", "a", "x", 10), tool("t2", "a", "y", 20))]
    assert added == [True, True, False]
    trace = build_eval_trace([facts])
    assert trace.partial
    assert names_of(trace) == ["x"]


def names_of(trace: Any) -> list[str]:
    return [c.name for c in trace.tool_calls]


def test_deep_arguments_on_tool_and_model_side_do_not_crash() -> None:
    deep = '{"a": ' * 1000 + "1" + "}" * 1000
    output = (
        '[{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "t", '
        f'"arguments": {deep}}}]}}]'
    )
    spans = [
        agent("a"),
        model("m1", "a", 5, 9, output),
        tool("t1", "a", "t", 10, args=deep.replace("1}", "2}", 1), call_id="c1"),
    ]
    (call,) = to_eval_trace(spans).tool_calls
    assert call.source == "genai:gen_ai.tool.call.arguments"
    assert call.args is not None


def test_the_field_order_that_positional_hot_loop_construction_relies_on() -> None:
    """``TraceFacts.add``, ``calls._record`` and ``build._add_call`` (a ``ToolCall`` from the
    first fields of a ``model.CallRow``) build these by position, and ``model.eval_span_of_row``
    reads a row by position: a new or moved field must fail here, not shift every value after
    it."""
    from dataclasses import fields

    from tooltrail.convert.calls import CallRecord
    from tooltrail.convert.facts import SpanFact
    from tooltrail.model import EvalSpan, ToolCall, eval_span_of_row

    def names(cls: type) -> list[str]:
        return [f.name for f in fields(cls)]

    assert names(SpanFact)[:7] == [
        "span_id", "parent_id", "role", "name", "start_ns", "end_ns", "status_code",
    ]  # fmt: skip
    assert names(CallRecord)[:13] == [
        "fact", "name", "args", "call_id", "source", "status", "error", "agent", "start_ns",
        "end_ns", "depth", "turn_root", "positional",
    ]  # fmt: skip
    assert names(ToolCall) == [
        "name", "args", "call_id", "span_id", "parent_span_id", "start_ns", "end_ns", "status",
        "error", "turn", "agent", "source", "result",
    ]  # fmt: skip
    assert names(EvalSpan) == [
        "tool_name", "attributes", "name", "span_id", "parent_span_id", "start_ns", "end_ns",
        "status",
    ]  # fmt: skip
    row = ("n", {"a": 1}, "c", "s", "p", 1, 2, "error", "e", 3, "ag", "src", {"r": 1}, "nm")
    assert ToolCall(*row[:13]) == ToolCall(
        name="n", args={"a": 1}, call_id="c", span_id="s", parent_span_id="p", start_ns=1,
        end_ns=2, status="error", error="e", turn=3, agent="ag", source="src", result={"r": 1},
    )  # fmt: skip
    attributes = {
        "tool_status": "error", "turn": 3, "source": "src", "tool_args": {"a": 1},
        "tool_call_id": "c", "tool_error": "e", "tool_result": {"r": 1}, "agent": "ag",
    }  # fmt: skip
    assert eval_span_of_row(row) == EvalSpan(
        tool_name="n", attributes=attributes, name="nm", span_id="s", parent_span_id="p",
        start_ns=1, end_ns=2, status="error",
    )  # fmt: skip
