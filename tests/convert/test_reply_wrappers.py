"""The reply inside a framework's result wrapper (issue 23): a repr such as Pydantic AI's
``AgentRunResult(output='...')`` or OpenAI Agents' ``RunResult(..., final_output='...')``
recorded as an agent span's output gives the text inside, read without ``eval``. Spans written
with the real OpenTelemetry SDK."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tooltrail.convert import read_traces
from tooltrail.dialects.reprs import MAX_REPR_CHARS, repr_field
from tooltrail.otlp import json_line

RUN_RESULT = (
    "RunResult(input='Refund ORD-7731', new_items=[MessageOutputItem(agent=Agent(name='shop'), "
    "raw_item=ResponseOutputMessage(id='msg_1', content=[ResponseOutputText(text='draft', "
    "type='output_text')]))], raw_responses=[ModelResponse(output=[ResponseOutputMessage("
    "id='msg_1')], usage=Usage(requests=1))], "
    "final_output='Refund issued: it\\'s $49.99 (ORD-7731).', "
    "input_guardrail_results=[], _last_agent=<agents.agent.Agent object at 0x7f3a2c1b9d90>)"
)


def reply_of(tmp_path: Path, attributes: dict[str, str]) -> str | None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("agent").start_span("Agent workflow", attributes=attributes).end()
    provider.shutdown()
    path = tmp_path / "run.otlp.jsonl"
    path.write_bytes(json_line(encode_spans(exporter.get_finished_spans())))
    (trace,) = read_traces([path], content=True)
    assert [t.reply for t in trace.turns] == [trace.output]
    return trace.output


@pytest.mark.parametrize(
    ("recorded", "reply"),
    [
        ("AgentRunResult(output='The refund is issued.')", "The refund is issued."),
        (RUN_RESULT, "Refund issued: it's $49.99 (ORD-7731)."),
        (
            "AgentRunResult(output=Answer(text='Shipped.'))",
            "AgentRunResult(output=Answer(text='Shipped.'))",
        ),
        ("AgentRunResult(output=Answer(answer='Shipped.', confidence=0.9))", "Shipped."),
        ("Result(output={'response': 'Shipped.'})", "Shipped."),
        (json.dumps("AgentRunResult(output='As JSON text.')"), "As JSON text."),
        (json.dumps({"output": "AgentRunResult(output='Nested.')"}), "Nested."),
        ("Please call support (555-0100)", "Please call support (555-0100)"),
        ("Done(no keywords)", "Done(no keywords)"),
    ],
)
def test_an_agent_output_wrapped_in_a_result_repr_gives_the_text_inside(
    tmp_path: Path, recorded: str, reply: str
) -> None:
    agent = {"openinference.span.kind": "AGENT", "output.value": recorded}
    assert reply_of(tmp_path, agent) == reply
    traceloop = {"traceloop.span.kind": "agent", "traceloop.entity.output": recorded}
    assert reply_of(tmp_path, traceloop) == reply


def test_only_top_level_keywords_count_and_nothing_is_evaluated() -> None:
    keys = ("output", "final_output")
    assert repr_field("R(items=[M(output='inner')], final_output='top')", keys) == "top"
    assert repr_field("R(items=[M(output='inner')])", keys) is None
    assert repr_field("R(output=__import__('os').system('true'))", keys) is None
    assert repr_field("R(output=" + "x" * MAX_REPR_CHARS + ")", keys) is None
