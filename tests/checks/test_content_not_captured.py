"""A trace that records no content gets no verdict on what it cannot show (issue 23): model
spans whose finish reason says tools were asked for while no call can be read give every check
that reads the calls an error score, "content not captured", never a FAIL; conversion reports
it once per trace. Traces written with the real OpenTelemetry SDK; the corpus' no-content ADK
recording is in tests/evaluate/test_evaluate_corpus.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import ClassVar

from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from tooltrail.checks import CheckContext, Score
from tooltrail.checks.registry import Registry
from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.otlp import json_line
from tooltrail.score import evaluate_trace
from tooltrail.suite import TestCase
from tooltrail.suite.case import EvaluatorConfig

REASON = "a model response asked for tools (its finish reason), but no tool call is recorded"
EXPLANATION = (
    f"Content not captured: {REASON}; this check reads the tool calls and gives no verdict."
)


def record(finish: str) -> list[ReadableSpan]:
    """An agent whose model spans record only their finish reasons and token counts (an
    OpenAI-style instrumentation with content capture off) and no tool span."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    agent = tracer.start_span(
        "invoke_agent refund", attributes={"gen_ai.operation.name": "invoke_agent"}
    )
    for reasons in ((finish,), ("stop",)):
        tracer.start_span(
            "chat gpt-4o",
            context=set_span_in_context(agent),
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.finish_reasons": reasons,
                "gen_ai.usage.input_tokens": 10,
            },
        ).end()
    agent.end()
    provider.shutdown()
    return list(exporter.get_finished_spans())


def dump(tmp_path: Path, spans: list[ReadableSpan]) -> Path:
    path = tmp_path / "nocontent.otlp.jsonl"
    path.write_bytes(json_line(encode_spans(spans)))
    return path


def test_a_tool_finish_reason_without_any_call_marks_the_trace(tmp_path: Path) -> None:
    (trace,) = read_traces([dump(tmp_path, record("tool_calls"))])
    assert trace.tool_calls == []
    assert trace.content_missing == REASON


def test_every_spelling_of_the_tool_finish_reason_is_read(tmp_path: Path) -> None:
    for finish in ("tool_calls", "tool_use", "tool-calls", "tool_call", "function_call"):
        (trace,) = read_traces([dump(tmp_path, record(finish))])
        assert trace.content_missing == REASON, finish


def test_a_stop_finish_reason_is_a_run_without_calls(tmp_path: Path) -> None:
    (trace,) = read_traces([dump(tmp_path, record("stop"))])
    assert trace.content_missing is None
    case = TestCase(id="c", required_tools=["lookup_order"])
    (score,) = evaluate_trace(case, trace).scores
    assert (score.passed, score.error) == (False, None)  # a real FAIL: nothing was asked


def test_checks_that_read_calls_give_an_error_score_not_a_fail(tmp_path: Path) -> None:
    (trace,) = read_traces([dump(tmp_path, record("tool_calls"))])
    case = TestCase(
        id="c",
        required_tools=["lookup_order"],
        forbidden_tools=["delete_account"],
        max_latency_ms=60_000,
        max_tool_calls=3,
    )
    result = evaluate_trace(case, trace)
    by_name = {score.name: score for score in result.scores}
    for name in ("required_tool:lookup_order", "forbidden_tool:delete_account", "max_tool_calls"):
        score = by_name[name]
        assert (score.passed, score.value, score.error) == (False, 0.0, "ContentNotCaptured")
        assert score.explanation == EXPLANATION
    latency = by_name["max_latency_ms"]  # the wall time does not need the calls
    assert (latency.passed, latency.error) == (True, None)
    assert not result.passed


@dataclasses.dataclass(frozen=True)
class CountCalls:
    """A plug-in check that reads the calls (it does not say otherwise)."""

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("count_calls", "count_calls", f"{ctx.view.size} calls")


@dataclasses.dataclass(frozen=True)
class SpanCount:
    """A plug-in check that says it does not read the calls."""

    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("span_count", "span_count", "counted")


def test_plug_in_checks_are_taken_to_read_calls_unless_they_say_not(tmp_path: Path) -> None:
    (trace,) = read_traces([dump(tmp_path, record("tool_use"))])
    registry = Registry()
    registry.register("count_calls", CountCalls)
    registry.register("span_count", SpanCount)
    case = TestCase(
        id="c", evaluators=[EvaluatorConfig("count_calls"), EvaluatorConfig("span_count")]
    )
    counted, spans = evaluate_trace(case, trace, registry=registry).scores
    assert (counted.name, counted.passed, counted.error) == (
        "count_calls", False, "ContentNotCaptured",
    )  # fmt: skip
    assert (spans.name, spans.passed, spans.error) == ("span_count", True, None)


def test_convert_reports_it_once_per_trace(tmp_path: Path) -> None:
    path = dump(tmp_path, record("tool_calls"))
    result = CliRunner().invoke(main, ["convert", str(path)])
    assert result.exit_code == 0
    (line,) = result.stdout.splitlines()
    shown = json.loads(line)
    assert shown["content_missing"] == REASON
    trace_id = shown["trace_id"]
    assert result.stderr.splitlines() == [f"trace {trace_id}: content not captured: {REASON}"]
