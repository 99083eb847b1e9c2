"""``--forward``: send every received trace on to a downstream OTLP endpoint, tagged.

Spans leave as they came (what ``tooltrail.otlp.Span`` keeps of them), tool spans redacted as
the live path's ``ToolArgsProcessor`` redacts them (``serve.redaction``: the source attributes
too, not only ``tool_args``), plus the ``tool_name`` and ``tool_args`` attributes it puts on
tool spans (same canonical JSON). Sending happens on a thread of its own, from
a bounded queue, so a slow downstream never stalls evaluation; when the queue is full a trace
is not forwarded and that is counted and logged (evaluation is not affected).

With ``--forward-verdicts`` the sink is not the buffer's but the evaluator's (its
``forward_to``): each trace comes once judged, with its verdict (``CompletedTrace.verdict``),
which goes on its root span (``pipeline.verdicts``), so a collector's tail sampling can keep
what failed.
"""

from __future__ import annotations

import dataclasses
import email.utils
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import grpc

from tooltrail.dialects import read_tool_call
from tooltrail.otlp import LogRecord, Span, encode_request
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.pipeline.span_redaction import redacted_other_span
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.pipeline.verdicts import stamped_spans
from tooltrail.redact import Redaction, tool_args_text
from tooltrail.serve.config import TRACES_PATH
from tooltrail.serve.redaction import redacted_tool_span

_log = logging.getLogger(__name__)

PROTOCOLS = ("grpc", "http/protobuf")
#: Spans per downstream request at most (traces are never split across requests).
_BATCH_SPANS = 2048
_ATTEMPTS = 5
_TIMEOUT_S = 10.0
_RETRY_HTTP = frozenset({429, 502, 503, 504})
_RETRY_GRPC = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED,
     grpc.StatusCode.DEADLINE_EXCEEDED}
)  # fmt: skip
_STOP = object()


def tagged(spans: list[Span], redaction: Redaction) -> list[Span]:
    """``spans`` with each tool span redacted (``serve.redaction``) and tagged with
    ``tool_name``/``tool_args`` (copies; other spans with credentials replaced)."""
    out: list[Span] = []
    for span in spans:
        call = read_tool_call(span)
        if call is None:
            out.append(redacted_other_span(redaction, span))
            continue
        span = redacted_tool_span(redaction, span)
        attributes = dict(span.attributes)
        attributes["tool_name"] = call.name
        if call.args is not None:
            text, truncated = tool_args_text(redaction, call.args)
            attributes["tool_args"] = text
            if truncated:
                attributes["tool_args_truncated"] = True
        out.append(dataclasses.replace(span, attributes=attributes))
    return out


class ForwardSink:
    """A trace sink that forwards each trace to ``endpoint`` over OTLP (``grpc`` or HTTP)."""

    def __init__(
        self,
        endpoint: str,
        *,
        protocol: str = "http/protobuf",
        redaction: Redaction | None = None,
        max_queued_traces: int = 10_000,
        unwrap: Callable[[Any], Span] = lambda s: s,
        logs_seen: Callable[[], bool] = lambda: False,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown forward protocol {protocol!r}: use grpc or http/protobuf")
        self.endpoint = endpoint
        self._send = _GrpcSender(endpoint) if protocol == "grpc" else _HttpSender(endpoint)
        self._redaction = redaction or Redaction()
        self._unwrap = unwrap
        self._logs_seen = logs_seen
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queued_traces)
        self._warn = ThrottledWarning(_log)
        self.traces_forwarded = 0
        self.traces_dropped = 0
        self.failed_requests = 0
        self._thread = threading.Thread(target=self._run, name="tooltrail-forward", daemon=True)
        self._thread.start()

    def export_trace(self, trace: CompletedTrace) -> None:
        spans = [self._unwrap(s) for s in trace.spans]
        if self._logs_seen():
            # Log records ride in the buffer with their trace; only spans are forwarded.
            spans = [s for s in spans if s.__class__ is not LogRecord]
            if not spans:
                return
        if trace.verdict is not None:  # judged first (``--forward-verdicts``): on its root
            spans = stamped_spans(spans, trace.verdict)
        try:
            self._queue.put_nowait(spans)
        except queue.Full:
            self.traces_dropped += 1
            self._warn.warn("full", "tooltrail: forward queue full; a trace was not forwarded")

    def _run(self) -> None:
        stop = False
        while not stop:
            batch: list[list[Span]] = []
            taken = 1
            item = self._queue.get()
            size = 0
            while True:
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
                size += len(item)
                if size >= _BATCH_SPANS:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                taken += 1
            if batch:
                self._forward(batch)
            for _ in range(taken):
                self._queue.task_done()

    def _forward(self, batch: list[list[Span]]) -> None:
        try:
            spans = [s for trace in batch for s in tagged(trace, self._redaction)]
            data = encode_request(spans).SerializeToString()
        except Exception as exc:  # noqa: BLE001 - one bad trace must not stop forwarding
            self.failed_requests += 1
            self._warn.warn("encode", "tooltrail: could not encode traces to forward (%s)",
                            type(exc).__name__)  # fmt: skip
            return
        delay = 0.5
        for attempt in range(_ATTEMPTS):
            retry_after = self._send(data)
            if retry_after is None:
                self.traces_forwarded += len(batch)
                return
            if retry_after < 0 or attempt + 1 == _ATTEMPTS:
                break
            time.sleep(min(max(retry_after, delay), 30.0))
            delay *= 2
        self.failed_requests += 1
        self._warn.warn(
            "send", "tooltrail: could not forward %d traces to %s", len(batch), self.endpoint
        )

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Wait until every queued trace was sent (or given up on)."""
        deadline = time.monotonic() + timeout_millis / 1000
        done = self._queue.all_tasks_done
        with done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0 or not done.wait(left):
                    return False
        return True

    def shutdown(self) -> None:
        self._queue.put(_STOP)
        self._thread.join(timeout=60)
        self._send.close()


class _HttpSender:
    """POST to ``{endpoint}/v1/traces``: None on success, else seconds to wait (-1: give up)."""

    def __init__(self, endpoint: str) -> None:
        url = endpoint if "://" in endpoint else f"http://{endpoint}"
        self.url = url if url.rstrip("/").endswith(TRACES_PATH) else url.rstrip("/") + TRACES_PATH

    def __call__(self, data: bytes) -> float | None:
        request = urllib.request.Request(
            self.url, data=data, method="POST",
            headers={"Content-Type": "application/x-protobuf"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
                response.read()
            return None
        except urllib.error.HTTPError as exc:
            if exc.code not in _RETRY_HTTP:
                return -1.0
            return _retry_after(exc.headers.get("Retry-After"))
        except (urllib.error.URLError, OSError):
            return 0.0

    def close(self) -> None:
        return None


class _GrpcSender:
    def __init__(self, endpoint: str) -> None:
        target = endpoint.split("://", 1)[-1].rstrip("/")
        self._channel = grpc.insecure_channel(target)
        # Send the bytes as they are: no second serialization.
        self._export = self._channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=None,
            response_deserializer=None,
        )

    def __call__(self, data: bytes) -> float | None:
        try:
            self._export(data, timeout=_TIMEOUT_S)
            return None
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            return 0.0 if code in _RETRY_GRPC else -1.0

    def close(self) -> None:
        self._channel.close()


def _retry_after(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0
        return max(0.0, when.timestamp() - time.time())
