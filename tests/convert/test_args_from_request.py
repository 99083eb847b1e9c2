"""Arguments from the model's request (issue 23): a tool span that records no arguments takes
them from the model span that asked for the call, matched by call id, else by name and
position; a request made without arguments lists none, so the call reads ``{}``, not "not
captured". Read always (it is about calls, not content). Spans written with the real SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace
from tooltrail.otlp import json_line


def run(
    tmp_path: Path, model: dict[str, Any], tools: list[dict[str, Any]], model_span: str = "chat m"
) -> EvalTrace:
    """An agent span, one model span (``model_span`` named, ``model`` attributes), then one
    tool span per ``tools`` entry (attributes added to a GenAI ``execute_tool`` span that
    records no arguments)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    agent = tracer.start_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
    )
    inside = set_span_in_context(agent)
    tracer.start_span(model_span, context=inside, attributes=model).end()
    for extra in tools:
        name = extra["gen_ai.tool.name"]
        attributes = {"gen_ai.operation.name": "execute_tool", **extra}
        tracer.start_span(f"execute_tool {name}", context=inside, attributes=attributes).end()
    agent.end()
    provider.shutdown()
    path = tmp_path / "run.otlp.jsonl"
    path.write_bytes(json_line(encode_spans(exporter.get_finished_spans())))
    (trace,) = read_traces([path])
    return trace


def genai(*parts: dict[str, Any]) -> dict[str, Any]:
    messages = [{"role": "assistant", "parts": list(parts)}]
    return {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(messages)}


def test_a_request_without_arguments_gives_an_empty_dict(tmp_path: Path) -> None:
    model = genai({"type": "tool_call", "id": "c1", "name": "now"})
    tool = {"gen_ai.tool.name": "now", "gen_ai.tool.call.id": "c1"}
    trace = run(tmp_path, model, [tool])
    assert [(c.name, c.args) for c in trace.tool_calls] == [("now", {})]
    assert trace.content_missing is None


def test_an_adk_function_call_without_args_gives_an_empty_dict(tmp_path: Path) -> None:
    """ADK's ``call_llm`` span: the ``LlmResponse`` leaves ``args`` out of a call made
    without arguments."""
    response = {
        "content": {"role": "model", "parts": [{"function_call": {"id": "c1", "name": "now"}}]}
    }
    model = {"gcp.vertex.agent.llm_response": json.dumps(response)}
    tool = {"gen_ai.tool.name": "now", "gen_ai.tool.call.id": "c1"}
    trace = run(tmp_path, model, [tool], model_span="call_llm")
    assert [(c.name, c.args) for c in trace.tool_calls] == [("now", {})]


def test_without_call_ids_arguments_match_by_name_and_position(tmp_path: Path) -> None:
    model = genai(
        {"type": "tool_call", "name": "lookup", "arguments": {"id": "A"}},
        {"type": "tool_call", "name": "lookup", "arguments": {"id": "B"}},
        {"type": "tool_call", "name": "notify", "arguments": {}},
    )
    tools = [{"gen_ai.tool.name": n} for n in ("lookup", "lookup", "notify")]
    trace = run(tmp_path, model, tools)
    assert [(c.name, c.args) for c in trace.tool_calls] == [
        ("lookup", {"id": "A"}),
        ("lookup", {"id": "B"}),
        ("notify", {}),
    ]
    assert trace.content_missing is None


def test_a_tool_span_without_arguments_and_no_request_is_not_captured(tmp_path: Path) -> None:
    trace = run(tmp_path, {"gen_ai.operation.name": "chat"}, [{"gen_ai.tool.name": "now"}])
    assert [(c.name, c.args) for c in trace.tool_calls] == [("now", None)]
    assert trace.content_missing == "1 of 1 tool calls have no recorded arguments"
