"""``read_tool_call`` and friends on single spans: decoded otlp Spans and real SDK spans."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tooltrail import dialects
from tooltrail.dialects import read_tool_call
from tooltrail.otlp.decode.span import Span, SpanEvent

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(name: str, attributes: dict[str, Any], events: list[SpanEvent] | None = None) -> Span:
    return Span(TRACE, "b7ad6b7169203331", name=name, attributes=attributes, events=events or [])


@pytest.fixture
def sdk_spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def test_genai_tool_span_gives_name_args_and_call_id() -> None:
    call = read_tool_call(
        span(
            "execute_tool lookup_order",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"order_id": "ORD-7731"}',
            },
        )
    )
    assert call is not None
    assert (call.name, call.args, call.call_id) == (
        "lookup_order",
        {"order_id": "ORD-7731"},
        "call_1",
    )
    assert call.source == "genai:gen_ai.tool.call.arguments"


def test_arguments_not_captured_are_none_and_empty_arguments_are_empty() -> None:
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_time"}
    missing = read_tool_call(span("execute_tool get_time", base))
    empty = read_tool_call(
        span("execute_tool get_time", {**base, "gen_ai.tool.call.arguments": "{}"})
    )
    assert missing is not None and missing.args is None
    assert empty is not None and empty.args == {}


@pytest.mark.parametrize("placeholder", ["", "<not specified>", "<REDACTED>"])
def test_placeholders_are_not_values(placeholder: str) -> None:
    call = read_tool_call(
        span(
            "execute_tool notify",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "notify",
                "gen_ai.tool.call.id": placeholder,
                "gen_ai.tool.call.arguments": placeholder,
            },
        )
    )
    assert call is not None
    assert (call.call_id, call.args) == (None, None)


def test_arguments_that_are_not_an_object_are_not_arguments() -> None:
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    for raw in ('["a", 1]', "42", '"text"', "{not json"):
        call = read_tool_call(span("execute_tool t", {**base, "gen_ai.tool.call.arguments": raw}))
        assert call is not None and call.args is None, raw


def test_deeply_nested_arguments_do_not_crash() -> None:
    deep = '{"a": ' * 10_000 + "1" + "}" * 10_000
    call = read_tool_call(
        span(
            "execute_tool t",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "t",
                "gen_ai.tool.call.arguments": deep,
            },
        )
    )
    assert call is not None and call.args is None


def test_python_repr_arguments_are_never_executed(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    payload = f"{{'a': __import__('pathlib').Path({str(marker)!r}).write_text('x')}}"
    call = read_tool_call(
        span("t", {"openinference.span.kind": "TOOL", "tool.name": "t", "input.value": payload})
    )
    assert call is not None and call.args is None
    assert not marker.exists()


def test_python_repr_over_the_size_cap_is_not_parsed() -> None:
    huge = "{'k': '" + "x" * (dialects.values.MAX_LITERAL_CHARS + 1) + "'}"
    call = read_tool_call(
        span("t", {"openinference.span.kind": "TOOL", "tool.name": "t", "input.value": huge})
    )
    assert call is not None and call.args is None


def test_traceloop_positional_values_stay_under_args_when_names_are_unknown() -> None:
    call = read_tool_call(
        span(
            "issue_refund.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "issue_refund",
                "traceloop.entity.input": (
                    '{"args": ["ORD-7731", 49.99], "kwargs": {"notify": true}}'
                ),
            },
        )
    )
    assert call is not None
    assert call.args == {"notify": True, "args": ["ORD-7731", 49.99]}
    assert call.positional


def test_genai_arguments_named_args_and_kwargs_are_not_unwrapped() -> None:
    raw = '{"args": [1], "kwargs": {"x": 2}}'
    call = read_tool_call(
        span(
            "execute_tool run",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "run",
                "gen_ai.tool.call.arguments": raw,
            },
        )
    )
    assert call is not None and call.args == {"args": [1], "kwargs": {"x": 2}}


def test_strands_arguments_come_from_the_tool_message_event() -> None:
    call = read_tool_call(
        span(
            "execute_tool lookup_order",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"},
            [
                SpanEvent(
                    "gen_ai.tool.message",
                    0,
                    {"role": "tool", "content": '{"order_id": "ORD-1"}', "id": "t1"},
                )
            ],
        )
    )
    assert call is not None
    assert (call.args, call.call_id, call.source) == (
        {"order_id": "ORD-1"},
        "t1",
        "strands:gen_ai.tool.message",
    )


def test_adk_retry_plugin_result_marks_an_unset_span_as_failed() -> None:
    result = (
        '{"response_type": "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN", '
        '"error_type": "ConnectionError", "error_details": "gateway timeout"}'
    )
    call = read_tool_call(
        span(
            "execute_tool issue_refund",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "issue_refund",
                "gen_ai.tool.call.result": result,
                "gcp.vertex.agent.event_id": "8a279df5",
            },
        )
    )
    assert call is not None and call.failure == "gateway timeout"


@pytest.mark.parametrize(
    ("name", "attributes"),
    [
        ("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}),
        ("invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}),
        ("GET /orders", {"http.request.method": "GET"}),
        ("ChatOpenAI", {"openinference.span.kind": "LLM"}),
        ("x.task", {"traceloop.span.kind": "task"}),
        ("odd", {"gen_ai.operation.name": ["execute_tool"], "traceloop.span.kind": {"k": 1}}),
        ("no attributes", {}),
    ],
)
def test_spans_that_are_not_tool_calls_give_none(name: str, attributes: dict[str, Any]) -> None:
    assert read_tool_call(span(name, attributes)) is None


def test_sdk_readable_span_with_genai_attributes_is_read(sdk_spans: Any) -> None:
    provider, exporter = sdk_spans
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "execute_tool lookup_order",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.id": "call_9",
            "gen_ai.tool.call.arguments": '{"order_id": "ORD-9"}',
        },
    ):
        pass
    with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
        pass
    tool, chat = exporter.get_finished_spans()
    assert isinstance(tool, ReadableSpan)
    call = read_tool_call(tool)
    assert call is not None
    assert (call.name, call.args, call.call_id) == ("lookup_order", {"order_id": "ORD-9"}, "call_9")
    assert read_tool_call(chat) is None


def test_sdk_readable_span_events_carry_strands_arguments(sdk_spans: Any) -> None:
    provider, exporter = sdk_spans
    with provider.get_tracer("test").start_as_current_span(
        "execute_tool web_search",
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "web_search"},
    ) as current:
        current.add_event(
            "gen_ai.tool.message", {"role": "tool", "content": '{"query": "policy"}', "id": "t7"}
        )
    (finished,) = exporter.get_finished_spans()
    call = read_tool_call(finished)
    assert call is not None and (call.args, call.call_id) == ({"query": "policy"}, "t7")


def test_is_agent_span_knows_each_convention() -> None:
    assert dialects.is_agent_span(span("invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}))
    assert dialects.is_agent_span(span("ai.generateText", {}))
    assert dialects.is_agent_span(span("x", {"openinference.span.kind": "AGENT"}))
    assert dialects.is_agent_span(span("a.agent", {"traceloop.span.kind": "agent"}))
    assert dialects.is_agent_span(span("a", {"mlflow.spanType": '"AGENT"'}))
    assert not dialects.is_agent_span(span("chat m", {"gen_ai.operation.name": "chat"}))
    assert not dialects.is_agent_span(span("x", {"gen_ai.operation.name": ["invoke_agent"]}))


def test_conversation_id_reads_every_known_attribute() -> None:
    for key in dialects.CONVERSATION_KEYS:
        value = '"s-1"' if key == "mlflow.trace.session" else "s-1"
        assert dialects.conversation_id({key: value}) == "s-1", key
    assert dialects.conversation_id({"gen_ai.conversation.id": ""}) is None
