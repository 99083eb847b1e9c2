"""End to end: a scripted agent's real OpenTelemetry SDK exporter -> ``tooltrail serve`` ->
evaluation events at a loopback OTLP logs receiver, pointing at the spans they judge."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from serve_helpers import HttpLogsReceiver, LogsReceiver, attributes_of, write_suite

from tooltrail.convert import read_traces
from tooltrail.live import ToolCallSpan
from tooltrail.otlp import read_spans
from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread

RUNS = ("correct", "skipped_verification", "wrong_amount", "looping")


@dataclass
class AgentRun:
    """What the scripted agent did in one run: the trace and the span of each call."""

    name: str
    trace_id: str = ""
    root_span_id: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)  # (tool, span id)

    def span_of(self, tool: str, nth: int = 0) -> str:
        return [span for name, span in self.calls if name == tool][nth]


def refund_agent(tracer: Tracer, run: str) -> AgentRun:
    """The seed's refund agent, scripted: no model, the tools only record their spans."""
    record = AgentRun(run)
    root_attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"}
    with tracer.start_as_current_span(
        "invoke_agent refund_agent", attributes=root_attributes
    ) as root:
        context = root.get_span_context()
        record.trace_id = f"{context.trace_id:032x}"
        record.root_span_id = f"{context.span_id:016x}"

        def call(tool: str, args: dict[str, object]) -> None:
            with ToolCallSpan(tool, args, call_id=f"call-{len(record.calls)}", tracer=tracer) as c:
                record.calls.append((tool, f"{c.span.get_span_context().span_id:016x}"))

        lookups = 3 if run == "looping" else 1
        for _ in range(lookups):
            call("lookup_order", {"order_id": "ORD-7731"})
        if run != "skipped_verification":
            call("verify_identity", {"customer_id": "C-118"})
        amount = 499.9 if run == "wrong_amount" else 49.99
        call("issue_refund", {"order_id": "ORD-7731", "amount": amount})
    return record


def run_agent(exporter: object) -> dict[str, AgentRun]:
    """All four runs through a real SDK pipeline exporting with ``exporter``."""
    provider = TracerProvider(resource=Resource.create({"service.name": "refund-service"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
    tracer = provider.get_tracer("refund-agent")
    runs = {run: refund_agent(tracer, run) for run in RUNS}
    assert provider.force_flush(10_000)
    provider.shutdown()
    return runs


@pytest.fixture
def logs() -> Iterator[LogsReceiver]:
    receiver = LogsReceiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def serve(tmp_path: Path, logs: LogsReceiver) -> Iterator[RunningReceiver]:
    config = ServeConfig(
        suite=write_suite(tmp_path),
        grpc_port=0,
        http_port=0,
        grace=0.1,
        results=tmp_path / "results.jsonl",
        scores_endpoint=logs.endpoint,
        scores_protocol="grpc",
        dump=tmp_path / "dump" / "traces.jsonl",
    )
    receiver = start_in_thread(config)
    yield receiver
    receiver.stop()


def exporter_for(protocol: str, receiver: RunningReceiver) -> object:
    if protocol == "http":
        return HttpSpanExporter(endpoint=f"http://127.0.0.1:{receiver.http_port}/v1/traces")
    return GrpcSpanExporter(endpoint=f"127.0.0.1:{receiver.grpc_port}", insecure=True)


def events_by_name(logs: LogsReceiver, trace_id: str) -> dict[str, list[tuple[str, dict]]]:
    out: dict[str, list[tuple[str, dict]]] = {}
    for record in logs.records():
        if record.trace_id.hex() != trace_id:
            continue
        attributes = attributes_of(record)
        out.setdefault(str(attributes["gen_ai.evaluation.name"]), []).append(
            (record.span_id.hex(), attributes)
        )
    return out


@pytest.fixture(params=["http", "grpc"])
def finished(request, serve: RunningReceiver, logs: LogsReceiver):
    """The four runs sent with the SDK exporter of one protocol; the receiver then stopped."""
    runs = run_agent(exporter_for(request.param, serve))
    stats = serve.stop()
    return runs, stats


def test_every_run_is_evaluated_once_from_the_sdk_exporter(finished) -> None:
    runs, stats = finished
    assert stats["traces_evaluated"] == 4
    assert (stats["cases_passed"], stats["cases_failed"]) == (1, 3)
    assert stats["traces_partial"] == 0 and stats["spans_rejected"] == 0


def test_wrong_amount_event_points_at_the_issue_refund_span(finished, logs) -> None:
    runs, _ = finished
    run = runs["wrong_amount"]
    ((span_id, attributes),) = events_by_name(logs, run.trace_id)["tool_arg_values:issue_refund"]
    assert span_id == run.span_of("issue_refund")
    assert attributes["gen_ai.evaluation.score.label"] == "fail"
    assert attributes["gen_ai.evaluation.score.value"] == 0.0
    assert attributes["tooltrail.case_id"] == "refund_policy"


def test_missing_tool_event_points_at_the_agent_span(finished, logs) -> None:
    runs, _ = finished
    run = runs["skipped_verification"]
    events = events_by_name(logs, run.trace_id)
    ((span_id, attributes),) = events["required_tool:verify_identity"]
    assert span_id == run.root_span_id
    assert attributes["gen_ai.evaluation.score.label"] == "fail"


def test_each_duplicate_call_gets_its_own_redundancy_event(finished, logs) -> None:
    runs, _ = finished
    run = runs["looping"]
    events = events_by_name(logs, run.trace_id)["no_redundant_tool_calls"]
    assert sorted(span for span, _ in events) == sorted(
        [run.span_of("lookup_order", 1), run.span_of("lookup_order", 2)]
    )
    assert all(a["gen_ai.evaluation.score.label"] == "fail" for _, a in events)


def test_case_verdict_goes_on_the_root_span(finished, logs) -> None:
    runs, _ = finished
    for name, run in runs.items():
        ((span_id, attributes),) = events_by_name(logs, run.trace_id)["tooltrail.case"]
        assert span_id == run.root_span_id
        assert attributes["gen_ai.evaluation.score.label"] == (
            "pass" if name == "correct" else "fail"
        )


def test_events_carry_no_explanations_by_default(finished, logs) -> None:
    assert logs.records()
    for record in logs.records():
        assert "gen_ai.evaluation.explanation" not in attributes_of(record)


def test_results_file_has_one_line_per_trace(finished, tmp_path) -> None:
    runs, _ = finished
    lines = [orjson.loads(line) for line in (tmp_path / "results.jsonl").read_bytes().splitlines()]
    verdicts = {line["trace_id"]: line["passed"] for line in lines}
    assert verdicts == {run.trace_id: name == "correct" for name, run in runs.items()}
    assert all(line["reason"] == "complete" and not line["partial"] for line in lines)


def test_dump_reads_back_to_the_same_calls(finished, tmp_path) -> None:
    runs, _ = finished
    traces = {t.trace_id: t for t in read_traces([tmp_path / "dump" / "traces.jsonl"])}
    for run in runs.values():
        calls = traces[run.trace_id].tool_calls
        assert [(c.name, c.span_id) for c in calls] == run.calls


def test_forwarded_spans_arrive_unchanged_with_tool_args(tmp_path: Path) -> None:
    downstream = start_in_thread(
        ServeConfig(grpc_port=None, http_port=0, grace=0.05, dump=tmp_path / "downstream.jsonl")
    )
    upstream = start_in_thread(
        ServeConfig(
            grpc_port=0,
            http_port=None,
            grace=0.05,
            forward=f"http://127.0.0.1:{downstream.http_port}",
        )
    )
    try:
        captured = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(captured))
        provider.add_span_processor(
            BatchSpanProcessor(exporter_for("grpc", upstream), schedule_delay_millis=50)
        )
        run = refund_agent(provider.get_tracer("refund-agent"), "wrong_amount")
        provider.force_flush()
        provider.shutdown()
        assert upstream.stop()["traces_forwarded"] == 1
    finally:
        downstream.stop()
    sent: dict[str, ReadableSpan] = {
        f"{s.context.span_id:016x}": s for s in captured.get_finished_spans()
    }
    received = {s.span_id: s for s in read_spans([tmp_path / "downstream.jsonl"])}
    assert received.keys() == sent.keys()
    for span_id, span in received.items():
        original = sent[span_id]
        assert span.name == original.name
        assert span.start_ns == original.start_time and span.end_ns == original.end_time
        extra = set(span.attributes) - set(original.attributes or {})
        if span.name.startswith("execute_tool"):
            assert extra == {"tool_name", "tool_args"}
        else:
            assert extra == set()
    refund = received[run.span_of("issue_refund")]
    assert refund.attributes["tool_args"] == '{"amount":499.9,"order_id":"ORD-7731"}'


def test_scores_go_to_an_otlp_http_endpoint_at_v1_logs(tmp_path: Path) -> None:
    logs = HttpLogsReceiver()
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(tmp_path),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            scores_endpoint=logs.endpoint,
            scores_protocol="http/protobuf",
            explanations=True,
        )
    )
    try:
        runs = run_agent(exporter_for("http", receiver))
        assert receiver.stop()["scores_sent"] > 0
    finally:
        logs.stop()
    assert set(logs.paths) == {"/v1/logs"}
    run = runs["wrong_amount"]
    (record,) = [
        r
        for r in logs.records()
        if r.trace_id.hex() == run.trace_id
        and attributes_of(r)["gen_ai.evaluation.name"] == "tool_arg_values:issue_refund"
    ]
    assert record.span_id.hex() == run.span_of("issue_refund")
    assert "499.9" in str(attributes_of(record)["gen_ai.evaluation.explanation"])
