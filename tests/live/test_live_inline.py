"""Inline evaluation: policies scored on each complete trace, off the agent's threads."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fixtures import refund_case, refund_suite
from opentelemetry import trace as trace_api
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace import TracerProvider

from tooltrail.convert import read_traces
from tooltrail.live import (
    CompletedTrace,
    InlineEvaluator,
    OtlpFileSink,
    ToolArgsProcessor,
    TraceBuffer,
    tool,
)
from tooltrail.model import EvalTrace
from tooltrail.pipeline.evaluation_events import EvaluationEventEmitter
from tooltrail.results import CaseResult
from tooltrail.score import evaluate_trace
from tooltrail.suite import TestSuite

SUITE = refund_suite(
    refund_case(
        "match",
        required_tools=["lookup_order", "issue_refund"],
        expected_tool_arguments={"issue_refund": {"amount": 49.99}},
    ),
    {"id": "tagged-only", "forbidden_tools": ["web_search"]},
    name="refund-agent",
)


def agent_trace(
    provider: TracerProvider, amount: float, agent: str = "refund_agent", case: str | None = None
) -> None:
    tracer = provider.get_tracer("agent")
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    if case:
        attributes["tooltrail.case_id"] = case
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes):
        with tool("lookup_order", {"order_id": "ORD-7731"}, tracer=tracer):
            pass
        with tool("issue_refund", {"order_id": "ORD-7731", "amount": amount}, tracer=tracer):
            pass


def pipeline(*sinks: Any) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(ToolArgsProcessor(TraceBuffer(*sinks, grace_s=0)))
    return provider


class Results:
    def __init__(self) -> None:
        self.calls: list[tuple[EvalTrace, list[CaseResult]]] = []
        self.threads: set[str] = set()

    def __call__(self, trace: EvalTrace, results: list[CaseResult]) -> None:
        self.threads.add(threading.current_thread().name)
        self.calls.append((trace, results))


def test_each_complete_trace_is_scored_by_the_policies_that_select_it() -> None:
    seen = Results()
    provider = pipeline(InlineEvaluator(SUITE, on_result=seen))
    agent_trace(provider, 49.99)
    agent_trace(provider, 499.9)
    provider.shutdown()
    verdicts = sorted((r.case_id, r.passed) for _, results in seen.calls for r in results)
    assert verdicts == [("refund", False), ("refund", True)]
    assert seen.threads == {"tooltrail-trace-buffer"}


def test_every_callback_gets_the_trace_and_its_results() -> None:
    first, second = Results(), Results()
    provider = pipeline(InlineEvaluator(SUITE, on_result=[first, second]))
    agent_trace(provider, 49.99)
    provider.shutdown()
    assert len(first.calls) == len(second.calls) == 1
    trace, results = first.calls[0]
    assert [c.name for c in trace.tool_calls] == ["lookup_order", "issue_refund"]
    assert results[0].trace_id == trace.trace_id


def test_a_case_without_match_applies_to_traces_tagged_with_its_id() -> None:
    seen = Results()
    provider = pipeline(InlineEvaluator(SUITE, on_result=seen))
    agent_trace(provider, 49.99, agent="other_agent", case="tagged-only")
    agent_trace(provider, 49.99, agent="other_agent")
    provider.shutdown()
    assert [[r.case_id for r in results] for _, results in seen.calls] == [["tagged-only"]]


def test_inline_verdicts_equal_an_offline_evaluation_of_the_written_dump(tmp_path: Path) -> None:
    seen = Results()
    dump = tmp_path / "dump.otlp.jsonl"
    provider = pipeline(OtlpFileSink(dump), InlineEvaluator(SUITE, on_result=seen))
    for amount in (49.99, 499.9, 5.0):
        agent_trace(provider, amount)
    provider.shutdown()
    inline = {
        trace.trace_id: [(s.name, s.value, s.passed, s.explanation) for s in results[0].scores]
        for trace, results in seen.calls
    }
    offline = {
        trace.trace_id: [
            (s.name, s.value, s.passed, s.explanation)
            for s in evaluate_trace(SUITE.cases_for(trace)[0], trace).scores
        ]
        for trace in read_traces(str(dump))
    }
    assert inline == offline and len(inline) == 3


def test_the_results_file_has_one_line_per_scored_trace_without_explanations(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out" / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=path, explanations=False)
    provider = pipeline(evaluator)
    agent_trace(provider, 499.9)
    agent_trace(provider, 49.99, agent="unmatched")
    provider.shutdown()
    [line] = path.read_text().splitlines()
    row = json.loads(line)
    assert row["passed"] is False and row["partial"] is False and row["reason"] == "complete"
    assert len(row["trace_id"]) == 32
    [result] = row["results"]
    assert result["case_id"] == "refund"
    assert all("explanation" not in score for score in result["scores"])
    assert "499.9" not in line


def test_explanations_can_be_kept_in_the_results_file(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    provider = pipeline(InlineEvaluator(SUITE, results_path=path, explanations=True))
    agent_trace(provider, 499.9)
    provider.shutdown()
    scores = json.loads(path.read_text())["results"][0]["scores"]
    assert any("499.9" in s["explanation"] for s in scores)


def test_a_failing_callback_neither_reaches_the_agent_nor_stops_the_others() -> None:
    def broken(trace: EvalTrace, results: list[CaseResult]) -> None:
        raise RuntimeError("callback bug")

    seen = Results()
    evaluator = InlineEvaluator(SUITE, on_result=[broken, seen])
    provider = pipeline(evaluator)
    agent_trace(provider, 49.99)
    provider.shutdown()
    assert len(seen.calls) == 1 and evaluator.errors == 1


def test_a_trace_that_cannot_be_evaluated_is_counted_not_raised() -> None:
    evaluator = InlineEvaluator(SUITE)
    evaluator.export_trace(CompletedTrace(1, [object()]))  # type: ignore[list-item]
    assert evaluator.errors == 1 and evaluator.traces_evaluated == 0


def test_partial_traces_are_scored_as_partial_unless_skipped() -> None:
    seen = Results()
    every = TestSuite.from_dict(
        {"name": "s", "cases": [{"id": "c", "match": "all", "required_tools": ["x"]}]}
    )
    provider = TracerProvider()
    provider.add_span_processor(TraceBuffer(InlineEvaluator(every, on_result=seen), grace_s=0))
    tracer = provider.get_tracer("t")
    root = tracer.start_span(
        "invoke_agent refund_agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"},
    )
    with trace_api.use_span(root):
        with tool("lookup_order", {"order_id": "ORD-7731"}, tracer=tracer):
            pass
    provider.force_flush()
    [(trace, _)] = seen.calls
    assert trace.partial is True

    skipped = Results()
    evaluator = InlineEvaluator(SUITE, on_result=skipped, skip_partial=True)
    evaluator.export_trace(CompletedTrace(1, [], partial=True, reason="max_age"))
    assert skipped.calls == [] and evaluator.errors == 0
    root.end()


def test_a_suite_file_path_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("name: s\ncases:\n  - id: c\n    match: all\n    required_tools: [x]\n")
    assert [c.id for c in InlineEvaluator(path).suite.cases] == ["c"]


def test_evaluation_events_plug_in_as_a_result_callback() -> None:
    exporter = InMemoryLogRecordExporter()
    provider = pipeline(
        InlineEvaluator(SUITE, on_result=EvaluationEventEmitter(exporter, batch=False))
    )
    agent_trace(provider, 499.9)
    provider.shutdown()
    records = exporter.get_finished_logs()
    assert records
    assert {r.log_record.attributes["gen_ai.evaluation.score.label"] for r in records} >= {"fail"}


def test_a_missing_suite_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="nope.yaml"):
        InlineEvaluator(tmp_path / "nope.yaml")
