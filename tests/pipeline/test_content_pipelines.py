"""Content where the suite runs outside ``tooltrail eval``: the live inline evaluator (real SDK
spans) and ``tooltrail serve`` (a real receiver on loopback) read each turn's input and each
call's result when a check of the suite says ``reads_content``, as ``eval`` does."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from serve_helpers import results_of_one_run
from test_content_batch import SaysWhatItSaw

from tooltrail.checks.registry import Registry, default_registry
from tooltrail.live import InlineEvaluator, TraceBuffer
from tooltrail.model import EvalTrace
from tooltrail.results import CaseResult
from tooltrail.suite import TestSuite


def test_the_inline_evaluator_reads_inputs_and_results_of_live_spans() -> None:
    registry = Registry()
    registry.register("saw", SaysWhatItSaw)
    suite = TestSuite.from_dict(
        {"name": "s", "cases": [{"id": "a", "match": "all", "evaluators": [{"name": "saw"}]}]}
    )
    seen: list[tuple[EvalTrace, list[CaseResult]]] = []
    evaluator = InlineEvaluator(
        suite, registry=registry, on_result=lambda t, r: seen.append((t, r))
    )
    provider = TracerProvider()
    provider.add_span_processor(TraceBuffer(evaluator, grace_s=0))
    tracer = provider.get_tracer("agent")
    asked = [{"role": "user", "parts": [{"type": "text", "content": "Where is ORD-7731?"}]}]
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "orders",
        "gen_ai.input.messages": json.dumps(asked),
    }
    call = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.arguments": '{"order_id": "ORD-7731"}',
        "gen_ai.tool.call.result": '{"status": "shipped"}',
    }
    with tracer.start_as_current_span("invoke_agent orders", attributes=agent):
        with tracer.start_as_current_span("execute_tool lookup_order", attributes=call):
            pass
    provider.shutdown()
    ((_, (result,)),) = seen
    (score,) = result.scores
    assert score.passed, score.explanation
    assert score.explanation == "input='Where is ORD-7731?' result={'status': 'shipped'}"


SERVE_SUITE = """\
name: content
cases:
  - id: a
    match: all
    evaluators: [{name: content_pipeline_saw}]
"""


def test_serve_reads_inputs_and_results_of_received_spans(tmp_path: Path) -> None:
    default_registry().register("content_pipeline_saw", SaysWhatItSaw, replace=True)
    (line,) = results_of_one_run(tmp_path, SERVE_SUITE, "pydantic-ai/a_refund_ok.otlp.pb")
    (case,) = line["results"]
    (score,) = case["scores"]
    assert score["passed"], score["explanation"]
    assert "ORD-7731" in score["explanation"]


def test_the_pytest_plugin_reads_inputs_and_results_of_captured_spans() -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tooltrail.pytest.sdk_spans import trace_of_spans

    captured = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(captured))
    tracer = provider.get_tracer("agent")
    asked = [{"role": "user", "parts": [{"type": "text", "content": "Where is ORD-7731?"}]}]
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": json.dumps(asked)}
    call = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.result": "shipped",
    }
    with tracer.start_as_current_span("invoke_agent orders", attributes=agent):
        with tracer.start_as_current_span("execute_tool lookup_order", attributes=call):
            pass
    trace = trace_of_spans(captured.get_finished_spans())
    assert trace.turns[0].input == "Where is ORD-7731?"
    assert trace.tool_calls[0].result == "shipped"
