"""Issue 5, done-when: the seed's four refund runs through the live path, scores received as
``gen_ai.evaluation.result`` log records by a loopback OTLP/gRPC logs receiver.

Pipeline: real SDK ``TracerProvider`` -> tooltrail ``ToolArgsProcessor`` -> ``TraceBuffer`` ->
(``OtlpFileSink``, ``InlineEvaluator``) -> ``EvaluationEventEmitter`` -> real
``OTLPLogExporter`` (gRPC) -> ``LogsReceiver`` on 127.0.0.1. The expected span of every event
comes from the SDK's own spans (an in-memory exporter on the same provider), never from
tooltrail's converter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fixtures import REPLY, SEED_CALLS, refund_case, refund_suite
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_evaluation_events import LogsReceiver, attributes_of

from tooltrail.annotate import EVALUATION_SPAN_NAME, write_annotated_traces, write_annotations
from tooltrail.live import InlineEvaluator, OtlpFileSink, ToolArgsProcessor, TraceBuffer, tool
from tooltrail.otlp import read_log_records, read_spans
from tooltrail.pipeline.evaluation_events import EvaluationEventEmitter, otlp_log_exporter

SUITE = refund_suite(refund_case(name=None), name="refund-agent", version="1.0")
# The seed's runs: (tool, arguments) in call order.
RUNS = SEED_CALLS

# Every event each run must produce, in order: (name, judged span, value, label). The judged
# span is "root" (the request span), "agent" (invoke_agent) or (tool, n): the n-th call of it.
ALL_PASS_TAIL = [
    ("tool_call_precision", "agent", 1.0, "pass"),
    ("no_redundant_tool_calls", "agent", 1.0, "pass"),
]
CONTAINS = [
    ("contains:$49.99", "agent", 1.0, "pass"),
    ("contains:ORD-7731", "agent", 1.0, "pass"),
]
EXPECTED = {
    "correct": CONTAINS
    + [
        ("required_tool:lookup_order", ("lookup_order", 0), 1.0, "pass"),
        ("required_tool:verify_identity", ("verify_identity", 0), 1.0, "pass"),
        ("required_tool:issue_refund", ("issue_refund", 0), 1.0, "pass"),
        ("tool_arg_values:issue_refund", ("issue_refund", 0), 1.0, "pass"),
        ("tool_order", "agent", 1.0, "pass"),
    ]
    + ALL_PASS_TAIL
    + [("tooltrail.case", "root", 1.0, "pass")],
    "skipped-verification": CONTAINS
    + [
        ("required_tool:lookup_order", ("lookup_order", 0), 1.0, "pass"),
        ("required_tool:verify_identity", "agent", 0.0, "fail"),
        ("required_tool:issue_refund", ("issue_refund", 0), 1.0, "pass"),
        ("tool_arg_values:issue_refund", ("issue_refund", 0), 1.0, "pass"),
        ("tool_order", "agent", 0.0, "fail"),
    ]
    + ALL_PASS_TAIL
    + [("tooltrail.case", "root", 0.0, "fail")],
    "wrong-amount": CONTAINS
    + [
        ("required_tool:lookup_order", ("lookup_order", 0), 1.0, "pass"),
        ("required_tool:verify_identity", ("verify_identity", 0), 1.0, "pass"),
        ("required_tool:issue_refund", ("issue_refund", 0), 1.0, "pass"),
        ("tool_arg_values:issue_refund", ("issue_refund", 0), 0.0, "fail"),
        ("tool_order", "agent", 1.0, "pass"),
    ]
    + ALL_PASS_TAIL
    + [("tooltrail.case", "root", 0.0, "fail")],
    "looping": CONTAINS
    + [
        ("required_tool:lookup_order", ("lookup_order", 0), 1.0, "pass"),
        ("required_tool:verify_identity", ("verify_identity", 0), 1.0, "pass"),
        ("required_tool:issue_refund", ("issue_refund", 0), 1.0, "pass"),
        ("tool_arg_values:issue_refund", ("issue_refund", 0), 1.0, "pass"),
        ("tool_order", "agent", 1.0, "pass"),
        ("tool_call_precision", ("web_search", 0), 5 / 6, "fail"),
        ("no_redundant_tool_calls", ("lookup_order", 1), 4 / 6, "fail"),
        ("no_redundant_tool_calls", ("lookup_order", 2), 4 / 6, "fail"),
        ("tooltrail.case", "root", 0.0, "fail"),
    ],
}


@dataclass
class LiveRun:
    """What one pass of the four runs left behind."""

    sdk_spans: list[ReadableSpan]
    plain: LogsReceiver
    explained: LogsReceiver
    dump: Path
    evaluated: list = field(default_factory=list)

    def trace_spans(self, run: str) -> list[ReadableSpan]:
        [root] = [s for s in self.sdk_spans if s.attributes.get("tooltrail.case_id") == run]
        return [s for s in self.sdk_spans if s.context.trace_id == root.context.trace_id]

    def span_of(self, run: str, key) -> ReadableSpan:
        spans = self.trace_spans(run)
        if key == "root":
            [span] = [s for s in spans if s.parent is None]
        elif key == "agent":
            [span] = [s for s in spans if s.name == "invoke_agent refund_agent"]
        else:
            tool_name, n = key
            calls = sorted(
                (s for s in spans if s.name == f"execute_tool {tool_name}"),
                key=lambda s: s.start_time,
            )
            span = calls[n]
        return span


def agent_run(tracer, run: str, calls) -> None:
    """A scripted refund agent: a request span, the agent span, one tool span per call."""
    with tracer.start_as_current_span("POST /refunds", attributes={"tooltrail.case_id": run}):
        agent_attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "refund_agent",
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": REPLY}]}]
            ),
        }
        with tracer.start_as_current_span("invoke_agent refund_agent", attributes=agent_attributes):
            for name, args in calls:
                with tool(name, args, tracer=tracer):
                    pass


@pytest.fixture(scope="module")
def live_run(tmp_path_factory) -> LiveRun:
    with pytest.MonkeyPatch.context() as env:
        env.delenv("TOOLTRAIL_EVALUATION_EXPLANATIONS", raising=False)
        plain, explained = LogsReceiver(), LogsReceiver()
        dump = tmp_path_factory.mktemp("live") / "refund.otlp.jsonl"
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "refund-service"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        evaluated: list = []
        evaluator = InlineEvaluator(
            SUITE,
            on_result=[
                EvaluationEventEmitter(
                    otlp_log_exporter("grpc", endpoint=plain.endpoint), suite="refund-agent"
                ),
                EvaluationEventEmitter(
                    otlp_log_exporter("grpc", endpoint=explained.endpoint), explanations=True
                ),
                lambda trace, results: evaluated.append((trace, results)),
            ],
        )
        buffer = TraceBuffer(OtlpFileSink(dump), evaluator, grace_s=0.0)
        provider.add_span_processor(ToolArgsProcessor(buffer))
        tracer = provider.get_tracer("refund-agent")
        for run, calls in RUNS.items():
            agent_run(tracer, run, calls)
        provider.shutdown()  # flushes the buffer, the evaluator and both emitters
    yield LiveRun(memory.get_finished_spans(), plain, explained, dump, evaluated)
    plain.stop()
    explained.stop()


def received(receiver: LogsReceiver, trace_id: int):
    return [
        record
        for _, _, record in receiver.records()
        if int.from_bytes(record.trace_id, "big") == trace_id
    ]


@pytest.mark.parametrize("run", list(RUNS))
def test_each_event_names_the_exact_span_it_judges(live_run, run):
    trace_id = live_run.trace_spans(run)[0].context.trace_id
    got = [
        (
            attributes_of(r)["gen_ai.evaluation.name"],
            r.trace_id.hex(),
            r.span_id.hex(),
            pytest.approx(attributes_of(r)["gen_ai.evaluation.score.value"]),
            attributes_of(r)["gen_ai.evaluation.score.label"],
        )
        for r in received(live_run.plain, trace_id)
    ]
    want = [
        (
            name,
            f"{trace_id:032x}",
            f"{live_run.span_of(run, key).context.span_id:016x}",
            value,
            label,
        )
        for name, key, value, label in EXPECTED[run]
    ]
    assert got == want


def test_wrong_amount_is_judged_on_the_refund_call_with_499_9(live_run):
    span = live_run.span_of("wrong-amount", ("issue_refund", 0))
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"])["amount"] == 499.9
    [record] = [
        r
        for r in received(live_run.plain, span.context.trace_id)
        if attributes_of(r)["gen_ai.evaluation.name"] == "tool_arg_values:issue_refund"
    ]
    assert record.span_id == span.context.span_id.to_bytes(8, "big")
    assert record.event_name == "gen_ai.evaluation.result"


def test_every_received_event_carries_case_suite_and_metric(live_run):
    records = [r for _, _, r in live_run.plain.records()]
    assert len(records) == sum(len(events) for events in EXPECTED.values())
    for record in records:
        attributes = attributes_of(record)
        assert attributes["tooltrail.case_id"] == "refund"
        assert attributes["tooltrail.suite"] == "refund-agent"
        assert attributes["tooltrail.metric"]


def test_events_are_emitted_under_tooltrails_own_scope(live_run):
    scopes = {scope.scope.name for _, scope, _ in live_run.plain.records()}
    assert scopes == {"tooltrail"}


def test_explanations_are_absent_by_default(live_run):
    records = [r for _, _, r in live_run.plain.records()]
    assert records
    assert all("gen_ai.evaluation.explanation" not in attributes_of(r) for r in records)


def test_explanations_are_present_when_enabled(live_run):
    span = live_run.span_of("wrong-amount", ("issue_refund", 0))
    [record] = [
        r
        for r in received(live_run.explained, span.context.trace_id)
        if attributes_of(r)["gen_ai.evaluation.name"] == "tool_arg_values:issue_refund"
    ]
    assert attributes_of(record)["gen_ai.evaluation.explanation"] == (
        "Tool 'issue_refund' was called with [{'order_id': 'ORD-7731', 'amount': 499.9}], "
        "not {'order_id': 'ORD-7731', 'amount': 49.99}."
    )
    assert record.span_id == span.context.span_id.to_bytes(8, "big")


# --- the same runs, annotated offline -------------------------------------------------------


def test_annotated_dump_has_one_evaluation_span_per_case_under_the_right_root(live_run, tmp_path):
    traces = [trace for trace, _ in live_run.evaluated]
    results = [result for _, results in live_run.evaluated for result in results]
    out = tmp_path / "annotated.otlp.jsonl"
    assert write_annotated_traces(out, read_spans(live_run.dump), results, traces=traces) == 4
    evaluation_spans = [s for s in read_spans(out) if s.name == EVALUATION_SPAN_NAME]
    assert len(evaluation_spans) == 4
    for run in RUNS:
        root = live_run.span_of(run, "root")
        [span] = [s for s in evaluation_spans if s.trace_id == f"{root.context.trace_id:032x}"]
        assert span.parent_span_id == f"{root.context.span_id:016x}"
        assert span.attributes["tooltrail.case_id"] == "refund"
        assert span.attributes["tooltrail.passed"] is (run == "correct")


def test_annotated_dump_lists_the_failed_scores_of_each_case(live_run, tmp_path):
    traces = [trace for trace, _ in live_run.evaluated]
    results = [result for _, results in live_run.evaluated for result in results]
    out = tmp_path / "annotated.otlp.jsonl"
    write_annotated_traces(out, read_spans(live_run.dump), results, traces=traces)
    failed = {
        s.trace_id: list(s.attributes["tooltrail.failed_scores"])
        for s in read_spans(out)
        if s.name == EVALUATION_SPAN_NAME
    }
    by_run = {run: failed[f"{live_run.span_of(run, 'root').context.trace_id:032x}"] for run in RUNS}
    assert by_run == {
        "correct": [],
        "skipped-verification": ["required_tool:verify_identity", "tool_order"],
        "wrong-amount": ["tool_arg_values:issue_refund"],
        "looping": ["tool_call_precision", "no_redundant_tool_calls"],
    }


def test_logs_file_of_the_runs_points_only_at_existing_spans(live_run, tmp_path):
    traces = [trace for trace, _ in live_run.evaluated]
    results = [result for _, results in live_run.evaluated for result in results]
    out = tmp_path / "events.otlp.jsonl"
    count = write_annotations(out, traces, results)
    existing = {
        (f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in live_run.sdk_spans
    }
    records = list(read_log_records(out))
    assert len(records) == count == sum(len(events) for events in EXPECTED.values())
    assert {(r.trace_id, r.span_id) for r in records} <= existing
