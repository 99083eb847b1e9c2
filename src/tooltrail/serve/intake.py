"""From a request body to spans held in the ``TraceBuffer``, with bounded memory.

The live path's ``TraceBuffer`` groups SDK spans by ``span.context.trace_id`` and completes a
trace when a span without a (local) parent has ended. ``ReceivedSpan`` gives a decoded OTLP
span exactly those two handles, so the receiver reuses the buffer unchanged.

The buffer bounds itself by flushing traces early (partial). A receiver can do better: it can
refuse. ``TraceIntake`` counts every span from the moment it is taken until the evaluation
stage releases it, and answers ``Throttled`` (503 / RESOURCE_EXHAUSTED) instead of taking a
request that would pass ``max_buffered_spans`` or ``max_traces``. A request that was answered
with success is never dropped afterwards: its spans are evaluated, flushed partial at shutdown
at the latest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tooltrail.otlp import (
    DecodeError,
    Diagnostic,
    Limits,
    LogRecord,
    Span,
    decode_json_request,
    decode_request,
)
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.outcome import Accepted, ShuttingDown, Throttled, Undecodable

#: How many rejection reasons ``partial_success.error_message`` quotes.
_MAX_REASONS = 3


class _TraceIds:
    """The ``span.context`` the buffer reads: only ``trace_id`` (an int, as in the SDK)."""

    __slots__ = ("trace_id",)

    def __init__(self, trace_id: int) -> None:
        self.trace_id = trace_id


class _LocalParent:
    """The ``span.parent`` of a span whose parent is in the same trace: not remote."""

    __slots__ = ()
    is_remote = False


_LOCAL_PARENT = _LocalParent()


class ReceivedSpan:
    """A decoded span as the ``TraceBuffer`` sees it. ``span`` is the ``tooltrail.otlp.Span``.

    OTLP does not say whether a parent is remote, so a span with a parent id is never a root:
    a trace whose root span never reaches the receiver is evaluated partial at ``max_age``.
    """

    __slots__ = ("span", "context", "parent")

    def __init__(self, span: Span, context: _TraceIds) -> None:
        self.span = span
        self.context = context
        self.parent = _LOCAL_PARENT if span.parent_span_id else None


class ReceivedLog:
    """A log record riding in the ``TraceBuffer`` with the spans of its trace.

    ``span`` is the ``tooltrail.otlp.LogRecord`` (so the evaluation stage hands spans and
    records to ``to_eval_trace`` together). It is never a root: a trace is still complete only
    once its root span arrived, and a record of a trace not seen yet waits there for it.
    """

    __slots__ = ("span", "context", "parent")

    def __init__(self, record: LogRecord, context: _TraceIds) -> None:
        self.span = record
        self.context = context
        self.parent = _LOCAL_PARENT


class TraceIntake:
    """``ingest(encoding, body)``: decode an export request and hand its spans to ``buffer``.

    ``buffer`` is anything with ``on_end(span)`` (the live ``TraceBuffer``). The evaluation
    stage calls ``release(trace_id, n)`` once it is done with ``n`` spans of a trace.
    """

    def __init__(
        self,
        buffer: Any,
        counters: ReceiverCounters,
        *,
        max_buffered_spans: int,
        max_traces: int,
        retry_after: float,
        limits: Limits | None = None,
    ) -> None:
        self._buffer = buffer
        self._counters = counters
        self._max_spans = max_buffered_spans
        self._max_traces = max_traces
        self._retry_after = retry_after
        self._limits = limits or Limits()
        self._lock = threading.Lock()
        self._held_spans = 0
        self._released_spans = 0
        #: trace id -> spans of it taken and not yet released.
        self._held: dict[int, int] = {}
        self._closed = False
        self._decoders: dict[str, Callable[..., list[Span]]] = {
            "protobuf": decode_request,
            "json": decode_json_request,
        }

    @property
    def held_spans(self) -> int:
        return self._held_spans

    @property
    def released_spans(self) -> int:
        """Spans the evaluation stage is done with, since start."""
        return self._released_spans

    @property
    def held_traces(self) -> int:
        return len(self._held)

    def close(self) -> None:
        """Refuse every request from now on (``ShuttingDown``)."""
        with self._lock:
            self._closed = True

    def __call__(self, encoding: str, body: bytes) -> Accepted:
        if self._closed:
            raise ShuttingDown("tooltrail serve is shutting down")
        if self._held_spans >= self._max_spans:  # cheap early refusal before decoding
            raise self._throttled()
        diagnostics: list[Diagnostic] = []
        # Eager: the converter reads a couple of dozen attributes per span, which costs less
        # from a plain dict than from lazily decoded attributes (measured: ~15% faster overall).
        try:
            spans = self._decoders[encoding](
                body, origin="request", limits=self._limits, diagnostics=diagnostics, lazy=False
            )
        except DecodeError as exc:
            raise Undecodable(f"not an OTLP traces request: {exc}") from None
        reasons = [d.message for d in diagnostics if "rejected" in d.message]
        received, contexts = self._group(spans)
        self._admit(received, contexts)
        self._counters.add(spans_received=len(received), spans_rejected=len(reasons))
        message = "; ".join(reasons[:_MAX_REASONS])
        if len(reasons) > _MAX_REASONS:
            message += f"; and {len(reasons) - _MAX_REASONS} more"
        return Accepted(len(received), len(reasons), message)

    def take_logs(self, records: list[LogRecord]) -> int:
        """Hold ``records`` (each with a trace id) with their traces, under the same limits as
        spans (raises ``Throttled`` or ``ShuttingDown`` and takes none). Returns how many."""
        if self._closed:
            raise ShuttingDown("tooltrail serve is shutting down")
        if not records:
            return 0
        if self._held_spans >= self._max_spans:
            raise self._throttled()
        received, counts = self._group(records, ReceivedLog)
        self._admit(received, counts)
        return len(received)

    def _admit(self, received: list[Any], contexts: dict[int, int]) -> None:
        """Hand ``received`` to the buffer, or refuse all of it (``Throttled``)."""
        with self._lock:
            if self._closed:
                raise ShuttingDown("tooltrail serve is shutting down")
            new_traces = sum(1 for t in contexts if t not in self._held)
            busy = self._held_spans > 0
            if busy and (
                self._held_spans + len(received) > self._max_spans
                or len(self._held) + new_traces > self._max_traces
            ):
                raise self._throttled()
            self._held_spans += len(received)
            held = self._held
            for trace_id, count in contexts.items():
                held[trace_id] = held.get(trace_id, 0) + count
            # Inside the lock: a request is either wholly in the buffer before shutdown
            # starts flushing it, or refused.
            on_end = self._buffer.on_end
            for span in received:
                on_end(span)

    def release(self, trace_id: int, count: int) -> None:
        """The evaluation stage is done with ``count`` spans of ``trace_id``."""
        with self._lock:
            self._held_spans -= count
            self._released_spans += count
            left = self._held.get(trace_id, 0) - count
            if left > 0:
                self._held[trace_id] = left
            else:
                self._held.pop(trace_id, None)

    def _group(self, items: list[Any], wrap: Any = None) -> tuple[list[Any], dict[int, int]]:
        """``items`` (spans, or log records) wrapped for the buffer (``ReceivedSpan`` by
        default), and how many there are of each trace."""
        wrap = wrap or ReceivedSpan
        contexts: dict[str, _TraceIds] = {}
        counts: dict[int, int] = {}
        received: list[Any] = []
        for item in items:
            context = contexts.get(item.trace_id)
            if context is None:
                context = contexts[item.trace_id] = _TraceIds(int(item.trace_id, 16))
            counts[context.trace_id] = counts.get(context.trace_id, 0) + 1
            received.append(wrap(item, context))
        return received, counts

    def _throttled(self) -> Throttled:
        return Throttled(
            f"buffer full ({self._held_spans} spans of {len(self._held)} traces held); retry later",
            self._retry_after,
        )
