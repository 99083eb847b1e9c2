"""OTLP/HTTP receiver on aiohttp: ``POST /v1/traces``, ``POST /v1/logs``, ``GET /healthz``,
``GET /stats``.

Status codes follow the OTLP/HTTP specification: 200 with ``partial_success`` when some spans
were rejected, 400 for a body that is not OTLP, 413 over the size limit (checked against
Content-Length first, then while streaming, then while decompressing), 415 for a content type or
content coding the receiver cannot read, 503 with ``Retry-After`` when the buffer is full. Every
4xx/5xx body is a ``google.rpc.Status`` in the request's encoding (protobuf unless it was JSON).
``/v1/logs`` answers the same way, with ``ExportLogsServiceResponse`` bodies.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from aiohttp import ClientPayloadError, web
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.serve import body
from tooltrail.serve.auth import BearerToken
from tooltrail.serve.config import HEALTH_PATH, LOGS_PATH, STATS_PATH, TRACES_PATH
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.outcome import Accepted, ShuttingDown, Throttled, Undecodable

_log = logging.getLogger(__name__)

#: ``ingest(encoding, data)``: decode an export request ("protobuf" or "json") and take its spans.
Ingest = Callable[[str, bytes], Accepted]

_CHUNK = 64 * 1024


def _require_token(auth: BearerToken, counters: ReceiverCounters) -> Any:
    """Middleware: 401 for a request without ``Authorization: Bearer <token>`` (not for the
    health check, which load balancers call without credentials)."""

    @web.middleware
    async def require_token(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == HEALTH_PATH or auth.accepts(request.headers.get("Authorization")):
            return await handler(request)
        counters.add(requests_unauthenticated=1, requests_refused=1)
        return web.json_response(
            {"code": code_pb2.UNAUTHENTICATED, "message": "missing or wrong bearer token"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="tooltrail"'},
        )

    return require_token


def build_app(
    ingest: Ingest,
    counters: ReceiverCounters,
    *,
    max_request_bytes: int,
    stats: Callable[[], dict[str, Any]] | None = None,
    healthy: Callable[[], bool] = lambda: True,
    ingest_logs: Ingest | None = None,
    body_timeout: float = 30.0,
    auth: BearerToken | None = None,
    middlewares: Sequence[Any] = (),
) -> web.Application:
    """The aiohttp application serving OTLP/HTTP traces (and logs, with ``ingest_logs``),
    health and counters. With ``auth``, every route but ``/healthz`` needs the bearer token."""
    routes = _Routes(ingest, counters, max_request_bytes, stats or counters.snapshot, healthy)
    routes.body_timeout = body_timeout
    chain = list(middlewares)
    if auth is not None:
        chain.append(_require_token(auth, counters))
    # client_max_size bounds aiohttp's own readers; the export routes stream with their own limit.
    app = web.Application(client_max_size=max_request_bytes, middlewares=chain)
    app.router.add_post(TRACES_PATH, routes.export_traces)
    if ingest_logs is not None:
        routes.ingest_logs = ingest_logs
        app.router.add_post(LOGS_PATH, routes.export_logs)
    app.router.add_get(HEALTH_PATH, routes.health)
    app.router.add_get(STATS_PATH, routes.stats)
    return app


class _Routes:
    def __init__(
        self,
        ingest: Ingest,
        counters: ReceiverCounters,
        limit: int,
        stats: Callable[[], dict[str, Any]],
        healthy: Callable[[], bool],
    ) -> None:
        self._ingest = ingest
        self.ingest_logs: Ingest | None = None
        self._counters = counters
        self._limit = limit
        self._stats = stats
        self._healthy = healthy
        self.body_timeout = 30.0
        self._warn = ThrottledWarning(_log)

    async def export_traces(self, request: web.Request) -> web.Response:
        return await self._export(request, self._ingest, _traces_response)

    async def export_logs(self, request: web.Request) -> web.Response:
        assert self.ingest_logs is not None
        return await self._export(request, self.ingest_logs, _logs_response)

    async def _export(
        self,
        request: web.Request,
        ingest: Ingest,
        respond: Callable[[Accepted, str], web.Response],
    ) -> web.Response:
        self._counters.add(requests=1)
        encoding = body.encoding_of(request.content_type)
        if encoding is None:
            return self._refuse(
                415,
                code_pb2.INVALID_ARGUMENT,
                f"unsupported content type {request.content_type!r}: "
                f"send {body.PROTOBUF} or {body.JSON}",
                "protobuf",
            )
        codings = body.codings_of(request.headers.get("Content-Encoding", ""))
        if codings is None:
            return self._refuse(
                415,
                code_pb2.INVALID_ARGUMENT,
                f"unsupported content encoding {request.headers['Content-Encoding']!r}: "
                "send gzip, deflate, zstd or none",
                encoding,
            )
        length = request.content_length
        if length is not None and length > self._limit:
            return self._too_large(f"request body is over the {self._limit}-byte limit", encoding)
        try:
            raw = await asyncio.wait_for(
                body.read_limited(request.content.iter_chunked(_CHUNK), self._limit),
                self.body_timeout,
            )
            data = body.decompress(raw, codings, self._limit) if codings else raw
        except TimeoutError:
            self._counters.add(requests_timed_out=1)
            response = self._refuse(
                408,
                code_pb2.DEADLINE_EXCEEDED,
                f"request body not received within {self.body_timeout:g} s",
                encoding,
            )
            response.force_close()
            return response
        except body.BodyTooLarge as exc:
            return self._too_large(str(exc), encoding)
        except body.BadBody as exc:
            return self._refuse(400, code_pb2.INVALID_ARGUMENT, str(exc), encoding)
        except (ConnectionError, ClientPayloadError):
            return self._aborted()
        try:
            outcome = ingest(encoding, data)
        except Undecodable as exc:
            return self._refuse(400, code_pb2.INVALID_ARGUMENT, str(exc), encoding)
        except Throttled as exc:
            self._counters.add(requests_throttled=1)
            response = self._refuse(503, code_pb2.UNAVAILABLE, str(exc), encoding)
            response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
            return response
        except ShuttingDown as exc:
            response = self._refuse(503, code_pb2.UNAVAILABLE, str(exc), encoding)
            response.headers["Retry-After"] = "1"
            return response
        return respond(outcome, encoding)

    async def health(self, request: web.Request) -> web.Response:
        if self._healthy():
            return web.json_response({"status": "ok"})
        return web.json_response({"status": "shutting down"}, status=503)

    async def stats(self, request: web.Request) -> web.Response:
        return web.Response(
            body=orjson.dumps(self._stats(), option=orjson.OPT_INDENT_2),
            content_type="application/json",
        )

    def _aborted(self) -> web.Response:
        """The client went away in the middle of its body: nobody reads an answer, nothing was
        taken. Counted, and a warning at most once a minute (no traceback: it is the peer's
        doing, not a fault of the receiver)."""
        self._counters.add(requests_aborted=1)
        self._warn.warn(
            "aborted",
            "tooltrail serve: a client went away before its request body was complete; "
            "nothing of it was taken (counter requests_aborted)",
        )
        response = web.Response(status=400)
        response.force_close()
        return response

    def _too_large(self, message: str, encoding: str) -> web.Response:
        return self._refuse(413, code_pb2.RESOURCE_EXHAUSTED, message, encoding)

    def _refuse(self, http_status: int, code: int, message: str, encoding: str) -> web.Response:
        self._counters.add(requests_refused=1)
        _log.debug("refused an export request: %s %s", http_status, message)
        if encoding == "json":
            return web.Response(
                status=http_status,
                body=orjson.dumps({"code": code, "message": message}),
                content_type=body.JSON,
            )
        status = status_pb2.Status(code=code, message=message)
        return web.Response(
            status=http_status, body=status.SerializeToString(), content_type=body.PROTOBUF
        )


def _export_response(
    outcome: Accepted, encoding: str, response_type: type[Any], rejected: tuple[str, str]
) -> web.Response:
    """An ``Export*ServiceResponse``: empty on full success, else ``partial_success`` with the
    count under ``rejected`` (its JSON and protobuf names) and the message."""
    json_name, field = rejected
    if encoding == "json":
        payload: dict[str, Any] = {}
        if outcome.rejected:
            payload["partialSuccess"] = {
                json_name: str(outcome.rejected),
                "errorMessage": outcome.message,
            }
        return web.Response(body=orjson.dumps(payload), content_type=body.JSON)
    response = response_type()
    if outcome.rejected:
        setattr(response.partial_success, field, outcome.rejected)
        response.partial_success.error_message = outcome.message
    return web.Response(body=response.SerializeToString(), content_type=body.PROTOBUF)


def _traces_response(outcome: Accepted, encoding: str) -> web.Response:
    return _export_response(
        outcome, encoding, ExportTraceServiceResponse, ("rejectedSpans", "rejected_spans")
    )


def _logs_response(outcome: Accepted, encoding: str) -> web.Response:
    return _export_response(
        outcome,
        encoding,
        ExportLogsServiceResponse,
        ("rejectedLogRecords", "rejected_log_records"),
    )
