"""Built-in "final answer" tools (dialects/final.py): the tool a framework ends a run with is
the reply, not a call of the trajectory, and only under that framework's instrumentation scope.
Spans written with the real OpenTelemetry SDK under each framework's scope name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace
from tooltrail.otlp import json_line

Step = tuple[str, dict[str, Any]]  # (span name, attributes) of a child of the agent span


def record(scope: str, agent: dict[str, Any], steps: list[Step]) -> list[ReadableSpan]:
    """One agent span (``agent`` attributes) with ``steps`` as its children, in order, each
    written by a tracer of instrumentation scope ``scope``."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(scope)
    root = tracer.start_span("agent run", attributes=agent)
    for name, attributes in steps:
        tracer.start_span(name, context=set_span_in_context(root), attributes=attributes).end()
    root.end()
    provider.shutdown()
    return list(exporter.get_finished_spans())


def convert(tmp_path: Path, spans: list[ReadableSpan], **options: Any) -> EvalTrace:
    path = tmp_path / "run.otlp.jsonl"
    path.write_bytes(json_line(encode_spans(spans)))
    (trace,) = read_traces([path], **options)
    return trace


def chat(parts: list[dict[str, Any]], finish: str) -> Step:
    return "chat gpt-4o", {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
        "gen_ai.response.finish_reasons": (finish,),
    }


def genai_tool(name: str, call_id: str, args: dict[str, Any]) -> Step:
    return f"execute_tool {name}", {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps(args),
    }


AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
LOOKUP = {"type": "tool_call", "id": "c1", "name": "lookup_order", "arguments": {"id": "O-1"}}


def pydantic_run(output_tool: str) -> list[Step]:
    """A Pydantic AI run with a structured output: the model calls ``lookup_order``, then the
    output tool, which no tool span runs."""
    final = {"type": "tool_call", "id": "c2", "name": output_tool,
             "arguments": {"status": "shipped", "order": "O-1"}}  # fmt: skip
    return [
        chat([LOOKUP], "tool_call"),
        genai_tool("lookup_order", "c1", {"id": "O-1"}),
        chat([final], "tool_call"),
    ]


def test_pydantic_ai_output_tools_are_the_reply_not_calls(tmp_path: Path) -> None:
    for output_tool in ("final_result", "final_result_Shipment"):
        trace = convert(tmp_path, record("pydantic-ai", AGENT, pydantic_run(output_tool)))
        assert [c.name for c in trace.tool_calls] == ["lookup_order"], output_tool
        assert trace.output == '{"status":"shipped","order":"O-1"}'
        assert trace.content_missing is None


def test_a_tool_named_final_result_under_another_framework_stays_a_call(tmp_path: Path) -> None:
    trace = convert(tmp_path, record("my.agent", AGENT, pydantic_run("final_result")))
    assert [c.name for c in trace.tool_calls] == ["lookup_order", "final_result"]
    assert trace.output is None


def test_smolagents_final_answer_is_the_reply(tmp_path: Path) -> None:
    """smolagents through OpenInference: ``final_answer`` runs as a TOOL span whose
    ``input.value`` holds ``{"answer": ...}``; the agent span records no output."""

    def oi_tool(name: str, args: dict[str, Any]) -> Step:
        return name, {
            "openinference.span.kind": "TOOL",
            "tool.name": name,
            "input.value": json.dumps(args),
        }

    steps = [
        oi_tool("lookup_order", {"id": "O-1"}),
        oi_tool("final_answer", {"answer": "Order O-1 has shipped."}),
    ]
    agent = {"openinference.span.kind": "AGENT"}
    scope = "openinference.instrumentation.smolagents"
    trace = convert(tmp_path, record(scope, agent, steps), content=True)
    assert [c.name for c in trace.tool_calls] == ["lookup_order"]
    assert trace.output == "Order O-1 has shipped."
    assert [t.reply for t in trace.turns] == ["Order O-1 has shipped."]
    other = convert(tmp_path, record("openinference.instrumentation.langchain", agent, steps))
    assert [c.name for c in other.tool_calls] == ["lookup_order", "final_answer"]


def test_adk_set_model_response_is_the_reply_and_its_request_no_call(tmp_path: Path) -> None:
    """ADK with an output schema and tools: the model asks for ``set_model_response`` and ADK
    runs it as a tool span."""
    final = {"type": "tool_call", "id": "c2", "name": "set_model_response",
             "arguments": {"summary": "Shipped."}}  # fmt: skip
    steps = [
        chat([LOOKUP], "stop"),
        genai_tool("lookup_order", "c1", {"id": "O-1"}),
        chat([final], "stop"),
        genai_tool("set_model_response", "c2", {"summary": "Shipped."}),
    ]
    trace = convert(tmp_path, record("gcp.vertex.agent", AGENT, steps))
    assert [c.name for c in trace.tool_calls] == ["lookup_order"]
    assert trace.output == "Shipped."
