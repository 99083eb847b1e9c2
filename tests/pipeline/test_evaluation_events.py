"""The live emitter: evaluation events through the Logs API, on a provider of its own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import pytest
from opentelemetry import _logs, trace
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExporter,
)
from opentelemetry.sdk.trace import TracerProvider

from tooltrail.pipeline.evaluation_events import (
    ENV_EXPLANATIONS,
    EvaluationEventEmitter,
    explanations_from_env,
    otlp_log_exporter,
)
from tooltrail.scores import EVENT_NAME, EvaluationEvent

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"


class LogsReceiver(logs_service_pb2_grpc.LogsServiceServicer):
    """A loopback OTLP/gRPC logs endpoint that keeps every request it receives."""

    def __init__(self) -> None:
        self.requests: list[logs_service_pb2.ExportLogsServiceRequest] = []
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def Export(self, request, context):  # noqa: N802 - the gRPC method name
        with self._lock:
            self.requests.append(request)
        return logs_service_pb2.ExportLogsServiceResponse()

    def records(self) -> list[tuple[logs_pb2.ResourceLogs, logs_pb2.ScopeLogs, logs_pb2.LogRecord]]:
        with self._lock:
            return [
                (rl, sl, record)
                for request in self.requests
                for rl in request.resource_logs
                for sl in rl.scope_logs
                for record in sl.log_records
            ]

    def stop(self) -> None:
        self.server.stop(grace=None)


def attributes_of(record: logs_pb2.LogRecord) -> dict[str, object]:
    """A received record's attributes as plain values."""
    out: dict[str, object] = {}
    for kv in record.attributes:
        kind = kv.value.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in kv.value.array_value.values]
        else:
            out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


@pytest.fixture
def receiver() -> Iterator[LogsReceiver]:
    server = LogsReceiver()
    yield server
    server.stop()


def grpc_emitter(receiver: LogsReceiver, **kwargs) -> EvaluationEventEmitter:
    """An emitter with a real OTLP/gRPC log exporter pointed at the loopback receiver."""
    return EvaluationEventEmitter(otlp_log_exporter("grpc", endpoint=receiver.endpoint), **kwargs)


def failing_event() -> EvaluationEvent:
    return EvaluationEvent(
        TRACE_ID,
        SPAN_ID,
        {
            "gen_ai.evaluation.name": "tool_arg_values:issue_refund",
            "gen_ai.evaluation.score.value": 0.0,
            "gen_ai.evaluation.score.label": "fail",
            "tooltrail.case_id": "wrong-amount",
            "tooltrail.failed_scores": ["a", "b"],
        },
        time_ns=1_796_003_452_484_441_000,
        severity_number=13,
        severity_text="WARN",
    )


def test_event_reaches_an_otlp_grpc_receiver_parented_to_the_judged_span(receiver):
    emitter = grpc_emitter(receiver)
    emitter.emit([failing_event()])
    assert emitter.force_flush(10_000)
    emitter.shutdown()

    [(resource_logs, scope_logs, record)] = receiver.records()
    assert record.trace_id.hex() == TRACE_ID
    assert record.span_id.hex() == SPAN_ID
    assert record.event_name == EVENT_NAME
    assert record.time_unix_nano == 1_796_003_452_484_441_000
    assert (record.severity_number, record.severity_text) == (13, "WARN")
    assert scope_logs.scope.name == "tooltrail"
    assert attributes_of(record) == {
        "gen_ai.evaluation.name": "tool_arg_values:issue_refund",
        "gen_ai.evaluation.score.value": 0.0,
        "gen_ai.evaluation.score.label": "fail",
        "tooltrail.case_id": "wrong-amount",
        "tooltrail.failed_scores": ["a", "b"],
    }


class HttpLogsReceiver(ThreadingHTTPServer):
    """A loopback OTLP/HTTP (protobuf) logs endpoint keeping every request body it receives."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, logs_service_pb2.ExportLogsServiceRequest]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
                receiver.requests.append((self.path, request))
                reply = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def test_event_reaches_an_otlp_http_receiver_when_the_variable_asks_for_it(monkeypatch):
    server = HttpLogsReceiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf")
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", f"http://127.0.0.1:{server.server_port}/v1/logs"
        )
        emitter = EvaluationEventEmitter(batch=False)
        emitter.emit([failing_event()])
        emitter.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    [(path, request)] = server.requests
    record = request.resource_logs[0].scope_logs[0].log_records[0]
    assert path == "/v1/logs"
    assert (record.trace_id.hex(), record.span_id.hex()) == (TRACE_ID, SPAN_ID)
    assert record.event_name == EVENT_NAME


def test_score_value_is_sent_as_a_double(receiver):
    emitter = grpc_emitter(receiver, batch=False)
    emitter.emit([failing_event()])
    emitter.shutdown()
    [(_, _, record)] = receiver.records()
    [value] = [kv.value for kv in record.attributes if kv.key == "gen_ai.evaluation.score.value"]
    assert value.WhichOneof("value") == "double_value"


def test_the_global_logger_provider_is_never_used_or_replaced():
    before = _logs.get_logger_provider()
    exporter = InMemoryLogRecordExporter()
    emitter = EvaluationEventEmitter(exporter, batch=False)
    emitter.emit([failing_event()])
    assert _logs.get_logger_provider() is before
    assert emitter.provider is not before
    assert len(exporter.get_finished_logs()) == 1


def test_an_ambient_current_span_never_leaks_into_an_event_without_ids():
    exporter = InMemoryLogRecordExporter()
    emitter = EvaluationEventEmitter(exporter, batch=False)
    event = failing_event()
    event.trace_id, event.span_id = "", ""
    tracer = TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("app work"):
        assert trace.get_current_span().get_span_context().is_valid
        emitter.emit([event])
    [record] = exporter.get_finished_logs()
    assert record.log_record.trace_id == 0
    assert record.log_record.span_id == 0


def test_the_ids_of_the_event_win_over_the_current_span():
    exporter = InMemoryLogRecordExporter()
    emitter = EvaluationEventEmitter(exporter, batch=False)
    tracer = TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("app work"):
        emitter.emit([failing_event()])
    [record] = exporter.get_finished_logs()
    assert f"{record.log_record.trace_id:032x}" == TRACE_ID
    assert f"{record.log_record.span_id:016x}" == SPAN_ID


class ExplodingExporter(LogRecordExporter):
    """An exporter whose collector is down: it records each batch it is given, then raises."""

    def __init__(self) -> None:
        self.batches: list[list[object]] = []

    def export(self, batch):
        self.batches.append(list(batch))
        raise RuntimeError("collector down")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_an_exporter_failure_never_reaches_the_caller(caplog):
    """The export is attempted with the event, its failure is logged where the SDK logs it,
    and the emitter goes on: the next event is handed to the exporter too."""
    exporter = ExplodingExporter()
    emitter = EvaluationEventEmitter(exporter, batch=False)
    with caplog.at_level(logging.ERROR):
        emitter.emit([failing_event()])
        emitter.emit([failing_event()])
    emitter.shutdown()
    assert [len(batch) for batch in exporter.batches] == [1, 1]
    record = exporter.batches[0][0].log_record  # type: ignore[attr-defined]
    assert f"{record.trace_id:032x}" == TRACE_ID
    assert f"{record.span_id:016x}" == SPAN_ID
    assert record.event_name == EVENT_NAME
    assert emitter.emitted == 2
    assert emitter.failed == 0  # the event was built and handed over: the export failed
    # logged by the SDK's processor (which may drop a repeat of the same message)
    assert any(r.exc_info and "collector down" in str(r.exc_info[1]) for r in caplog.records)


def test_a_malformed_result_is_counted_and_never_raises(caplog):
    emitter = EvaluationEventEmitter(InMemoryLogRecordExporter(), batch=False)
    from tooltrail.model import EvalTrace

    with caplog.at_level(logging.WARNING):
        emitter(EvalTrace(TRACE_ID), [object()])  # type: ignore[list-item]
    assert emitter.failed == 1
    assert "evaluation events" in caplog.text


def test_batched_events_are_all_delivered_by_force_flush():
    exporter = InMemoryLogRecordExporter()
    emitter = EvaluationEventEmitter(exporter)
    emitter.emit([failing_event()] * 5)
    assert emitter.force_flush(10_000)
    assert len(exporter.get_finished_logs()) == 5


def test_otlp_exporter_defaults_to_grpc(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    assert isinstance(otlp_log_exporter(endpoint="127.0.0.1:1"), GrpcExporter)


def test_otlp_protocol_comes_from_the_logs_variable_first(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf")
    assert isinstance(otlp_log_exporter(endpoint="http://127.0.0.1:1/v1/logs"), HttpExporter)


def test_otlp_protocol_falls_back_to_the_generic_variable(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    assert isinstance(otlp_log_exporter(endpoint="http://127.0.0.1:1/v1/logs"), HttpExporter)


def test_unsupported_otlp_protocol_warns_and_uses_grpc(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/json")
    with caplog.at_level(logging.WARNING):
        exporter = otlp_log_exporter(endpoint="127.0.0.1:1")
    assert isinstance(exporter, GrpcExporter)
    assert "http/json" in caplog.text


def test_explanations_are_off_unless_the_variable_enables_them(monkeypatch):
    monkeypatch.delenv(ENV_EXPLANATIONS, raising=False)
    assert explanations_from_env() is False
    monkeypatch.setenv(ENV_EXPLANATIONS, "true")
    assert explanations_from_env() is True
    assert EvaluationEventEmitter(InMemoryLogRecordExporter()).options.explanations is True


def test_a_bad_explanations_value_warns_and_keeps_them_off(monkeypatch, caplog):
    monkeypatch.setenv(ENV_EXPLANATIONS, "perhaps")
    with caplog.at_level(logging.WARNING):
        assert explanations_from_env() is False
    assert ENV_EXPLANATIONS in caplog.text
