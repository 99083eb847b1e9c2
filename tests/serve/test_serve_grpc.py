"""OTLP/gRPC of ``tooltrail serve``: status codes, partial success, limits, backpressure."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from serve_helpers import ANY_TRACE_SUITE, corpus, write_suite

from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread

REFUND_PB = "google-adk/a_refund_ok.otlp.pb"
LIMIT = 256 * 1024
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., RunningReceiver]]:
    started: list[RunningReceiver] = []

    def start(**overrides: object) -> RunningReceiver:
        settings: dict[str, object] = {
            "suite": write_suite(tmp_path, ANY_TRACE_SUITE),
            "grpc_port": 0,
            "http_port": None,
            "grace": 0.05,
            "max_request_bytes": LIMIT,
        }
        settings.update(overrides)
        receiver = start_in_thread(ServeConfig(**settings))  # type: ignore[arg-type]
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.stop()


@pytest.fixture
def channel() -> Iterator[Callable[[RunningReceiver], grpc.Channel]]:
    opened: list[grpc.Channel] = []

    def open_channel(receiver: RunningReceiver) -> grpc.Channel:
        opened.append(grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}"))
        return opened[-1]

    yield open_channel
    for ch in opened:
        ch.close()


def refund_request() -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest.FromString(corpus(REFUND_PB))


def spans_in(request: ExportTraceServiceRequest) -> list:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def test_export_is_answered_with_an_empty_response(serve, channel) -> None:
    receiver = serve()
    stub = trace_service_pb2_grpc.TraceServiceStub(channel(receiver))
    assert stub.Export(refund_request(), timeout=10) == ExportTraceServiceResponse()
    assert receiver.receiver.stats()["spans_received"] == len(spans_in(refund_request()))


def test_spans_with_bad_ids_are_rejected_with_partial_success(serve, channel) -> None:
    receiver = serve()
    request = refund_request()
    spans_in(request)[2].span_id = b"\x00\x01"
    response = trace_service_pb2_grpc.TraceServiceStub(channel(receiver)).Export(request)
    assert response.partial_success.rejected_spans == 1
    assert "spans[2].spanId" in response.partial_success.error_message


def test_undecodable_request_is_invalid_argument(serve, channel) -> None:
    receiver = serve()
    export = channel(receiver).unary_unary(EXPORT)
    with pytest.raises(grpc.RpcError) as caught:
        export(b"\xff\xff\xff\xff not protobuf", timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not an OTLP traces request" in caught.value.details()


def test_request_over_the_size_limit_is_resource_exhausted(serve, channel) -> None:
    receiver = serve()
    request = refund_request()
    spans_in(request)[0].attributes.append(
        KeyValue(key="big", value={"string_value": "x" * (LIMIT + 1)})
    )
    stub = trace_service_pb2_grpc.TraceServiceStub(channel(receiver))
    with pytest.raises(grpc.RpcError) as caught:
        stub.Export(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert receiver.receiver.stats()["spans_received"] == 0


def test_compressed_request_over_the_limit_once_decompressed_is_refused(serve, channel) -> None:
    receiver = serve()
    request = refund_request()
    spans_in(request)[0].attributes.append(
        KeyValue(key="big", value={"string_value": "x" * (8 * LIMIT)})
    )
    stub = trace_service_pb2_grpc.TraceServiceStub(channel(receiver))
    with pytest.raises(grpc.RpcError) as caught:
        stub.Export(request, timeout=10, compression=grpc.Compression.Gzip)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert receiver.receiver.stats()["spans_received"] == 0


def test_gzip_compressed_request_is_accepted(serve, channel) -> None:
    receiver = serve()
    stub = trace_service_pb2_grpc.TraceServiceStub(channel(receiver))
    stub.Export(refund_request(), timeout=10, compression=grpc.Compression.Gzip)
    assert receiver.receiver.stats()["spans_received"] == len(spans_in(refund_request()))


def test_full_buffer_is_resource_exhausted_with_retry_info(serve, channel) -> None:
    # 5: the refund trace's 9 spans fill the intake, and fit the buffer behind it (twice
    # the limit, 10); with 4 the buffer gives the trace up and frees the intake, a race with
    # the second request.
    receiver = serve(max_buffered_spans=5, grace=60.0, retry_after=1.5)
    stub = trace_service_pb2_grpc.TraceServiceStub(channel(receiver))
    stub.Export(refund_request(), timeout=10)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Export(refund_request(), timeout=10)
    error = caught.value
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    trailers = dict(error.trailing_metadata())
    # Where the OpenTelemetry Python exporter reads it ...
    retry = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    assert (retry.retry_delay.seconds, retry.retry_delay.nanos) == (1, 500_000_000)
    # ... and where the OTLP specification puts it.
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    assert status.code == code_pb2.RESOURCE_EXHAUSTED
    detail = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(detail) and detail == retry


def test_requests_after_shutdown_began_are_unavailable(serve, channel) -> None:
    receiver = serve()
    receiver.receiver.pipeline.close()
    stub = trace_service_pb2_grpc.TraceServiceStub(channel(receiver))
    with pytest.raises(grpc.RpcError) as caught:
        stub.Export(refund_request(), timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
