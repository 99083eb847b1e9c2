"""Tool results recorded only in what the model was sent next (issue 23): OpenAI-style
``role: tool`` messages (``tool_call_id``, ``content``) in a later model request, as a list of
messages or flattened attributes (OpenInference, Traceloop), Anthropic ``tool_result`` blocks
and GenAI ``gen_ai.tool.message`` span events, read by call id. Spans written with the real
OpenTelemetry SDK: a client-side tool call (no tool span) whose result only the next request
holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace
from tooltrail.otlp import json_line

ASKED = json.dumps([{"role": "assistant", "parts": [
    {"type": "tool_call", "id": "call_7", "name": "weather", "arguments": {"city": "Oslo"}},
]}])  # fmt: skip
CHAT = {"gen_ai.operation.name": "chat"}


def run(
    tmp_path: Path, second: dict[str, Any], events: list[tuple[str, dict[str, Any]]] = ()
) -> EvalTrace:
    """An agent whose first model response asks for ``weather`` (call ``call_7``) and whose
    second request (``second`` attributes, ``events``) is all that records the result."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    agent = tracer.start_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
    )
    inside = set_span_in_context(agent)
    tracer.start_span(
        "chat m", context=inside, attributes={**CHAT, "gen_ai.output.messages": ASKED}
    ).end()
    later = tracer.start_span("chat m", context=inside, attributes={**CHAT, **second})
    for name, attributes in events:
        later.add_event(name, attributes)
    later.end()
    agent.end()
    provider.shutdown()
    path = tmp_path / "run.otlp.jsonl"
    path.write_bytes(json_line(encode_spans(exporter.get_finished_spans())))
    (trace,) = read_traces([path], content=True)
    assert [call.name for call in trace.tool_calls] == ["weather"]
    return trace


OPENAI_MESSAGES = [
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "tool_calls": [{"id": "call_7", "type": "function",
     "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_7", "content": "{\"temp\": -3}"},
]  # fmt: skip


@pytest.mark.parametrize(
    "second",
    [
        {"gen_ai.input.messages": json.dumps(OPENAI_MESSAGES)},
        {"gen_ai.prompt": json.dumps(OPENAI_MESSAGES)},
        {
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Weather in Oslo?",
            "llm.input_messages.1.message.role": "tool",
            "llm.input_messages.1.message.tool_call_id": "call_7",
            "llm.input_messages.1.message.content": '{"temp": -3}',
        },
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Weather in Oslo?",
            "gen_ai.prompt.1.role": "tool",
            "gen_ai.prompt.1.tool_call_id": "call_7",
            "gen_ai.prompt.1.content": '{"temp": -3}',
        },
        {
            "gen_ai.input.messages": json.dumps(
                [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "call_7",
                                "content": '{"temp": -3}',
                            },
                        ],
                    }
                ]
            )
        },  # fmt: skip
        {
            "ai.prompt.messages": json.dumps(
                [
                    {
                        "role": "tool",
                        "content": [
                            {
                                "type": "tool-result",
                                "toolCallId": "call_7",
                                "toolName": "weather",
                                "output": {"type": "json", "value": {"temp": -3}},
                            },
                        ],
                    }
                ]
            )
        },  # fmt: skip
    ],
    ids=[
        "openai-messages",
        "langsmith-prompt",
        "openinference",
        "traceloop",
        "anthropic",
        "vercel",
    ],
)
def test_a_result_sent_back_as_a_tool_message_completes_its_call(
    tmp_path: Path, second: dict[str, Any]
) -> None:
    (call,) = run(tmp_path, second).tool_calls
    assert call.result == {"temp": -3}


def test_a_gen_ai_tool_message_event_completes_its_call(tmp_path: Path) -> None:
    event = ("gen_ai.tool.message", {"id": "call_7", "content": '{"temp": -3}'})
    (call,) = run(tmp_path, {}, [event]).tool_calls
    assert call.result == {"temp": -3}


def test_a_tool_message_for_another_call_id_is_not_taken(tmp_path: Path) -> None:
    other = [{"role": "tool", "tool_call_id": "call_8", "content": "sunny"}]
    (call,) = run(tmp_path, {"gen_ai.input.messages": json.dumps(other)}).tool_calls
    assert call.result is None
