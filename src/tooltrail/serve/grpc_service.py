"""OTLP/gRPC receiver: the ``TraceService/Export`` method on a ``grpc.aio`` server.

The method is registered with the service name and response type from opentelemetry-proto, but
takes the request as raw bytes: tooltrail's own decoder reads it once (lazily, rejecting bad spans
one by one for ``partial_success``), and a body that is not OTLP gets INVALID_ARGUMENT rather
than grpc's generic INTERNAL. A full buffer answers RESOURCE_EXHAUSTED with a ``RetryInfo`` both
where the Python SDK exporter reads it (``google.rpc.retryinfo-bin``) and where the OTLP
specification puts it (``grpc-status-details-bin``). ``LogsService/Export`` (the content of
traces as log records) is served the same way.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from google.protobuf.any_pb2 import Any as AnyPb
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from tooltrail.serve.auth import BearerToken
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.http import Ingest
from tooltrail.serve.outcome import Accepted, ShuttingDown, Throttled, Undecodable

_log = logging.getLogger(__name__)

_TRACES = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"].full_name
_LOGS = logs_service_pb2.DESCRIPTOR.services_by_name["LogsService"].full_name


class ExportReceiver:
    """An OTLP service whose ``Export`` hands the raw request bytes to ``ingest`` and answers
    with the service's response, ``partial_success`` naming what was rejected."""

    def __init__(
        self,
        ingest: Ingest,
        counters: ReceiverCounters,
        *,
        service: str,
        response_type: type[Any],
        rejected_field: str,
        auth: BearerToken | None = None,
    ) -> None:
        self._auth = auth
        self._ingest = ingest
        self._counters = counters
        self._service = service
        self._response_type = response_type
        self._rejected_field = rejected_field

    async def Export(  # noqa: N802 - the gRPC method name
        self, request: bytes, context: grpc.aio.ServicerContext
    ) -> Any:
        if self._auth is not None and not self._auth.accepts(_authorization(context)):
            self._counters.add(requests=1, requests_refused=1, requests_unauthenticated=1)
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        outcome = await _take(self._ingest, self._counters, request, context)
        response = self._response_type()
        if outcome.rejected:
            setattr(response.partial_success, self._rejected_field, outcome.rejected)
            response.partial_success.error_message = outcome.message
        return response

    def handler(self) -> grpc.GenericRpcHandler:
        """The generic handler to add to a server: raw request bytes in, protobuf out."""
        method = grpc.unary_unary_rpc_method_handler(
            self.Export,
            request_deserializer=None,
            response_serializer=self._response_type.SerializeToString,
        )
        return grpc.method_handlers_generic_handler(self._service, {"Export": method})


def trace_service(
    ingest: Ingest, counters: ReceiverCounters, auth: BearerToken | None = None
) -> ExportReceiver:
    """``TraceService/Export``."""
    return ExportReceiver(
        ingest,
        counters,
        auth=auth,
        service=_TRACES,
        response_type=trace_service_pb2.ExportTraceServiceResponse,
        rejected_field="rejected_spans",
    )


def logs_service(
    ingest: Ingest, counters: ReceiverCounters, auth: BearerToken | None = None
) -> ExportReceiver:
    """``LogsService/Export``: the content of traces, as log records."""
    return ExportReceiver(
        ingest,
        counters,
        auth=auth,
        service=_LOGS,
        response_type=logs_service_pb2.ExportLogsServiceResponse,
        rejected_field="rejected_log_records",
    )


async def _take(
    ingest: Ingest, counters: ReceiverCounters, request: bytes, context: grpc.aio.ServicerContext
) -> Accepted:
    """``ingest`` the request, or abort the call with the status OTLP prescribes."""
    counters.add(requests=1)
    try:
        return ingest("protobuf", request)
    except Undecodable as exc:
        counters.add(requests_refused=1)
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        raise  # abort raises; this line only satisfies type checkers
    except Throttled as exc:
        counters.add(requests_refused=1, requests_throttled=1)
        await context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            str(exc),
            trailing_metadata=_retry_metadata(exc.retry_after, str(exc)),
        )
        raise
    except ShuttingDown as exc:
        counters.add(requests_refused=1)
        await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        raise


def _authorization(context: grpc.aio.ServicerContext) -> str | None:
    """The ``authorization`` metadata value of a call, if any."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            return value if isinstance(value, str) else value.decode("latin-1")
    return None


def _retry_metadata(retry_after: float, message: str) -> tuple[tuple[str, bytes], ...]:
    seconds = max(retry_after, 0.0)
    delay = Duration(seconds=int(seconds), nanos=int((seconds % 1) * 1e9))
    retry_info = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = AnyPb()
    detail.Pack(retry_info)
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=message, details=[detail])
    return (
        ("google.rpc.retryinfo-bin", retry_info.SerializeToString()),
        ("grpc-status-details-bin", status.SerializeToString()),
    )
