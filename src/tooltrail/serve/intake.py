"""From a request body to spans held in the ``TraceBuffer``, with bounded memory.

The live path's ``TraceBuffer`` groups items by trace and completes a trace when a local root
has ended. It reads SDK spans through ``pipeline.sdk`` and any other item in its own shape
(``pipeline.buffer.Traced``: ``trace_id``, ``local_root``): ``ReceivedSpan`` and
``ReceivedLog`` are that shape for a decoded OTLP span and log record, so the receiver reuses
the buffer unchanged, and its sinks read ``CompletedTrace[Received]``.

The buffer bounds itself by flushing traces early (partial). A receiver can do better: it can
refuse. ``TraceIntake`` counts every span from the moment it is taken until the evaluation
stage releases it, and answers ``Throttled`` (503 / RESOURCE_EXHAUSTED) instead of taking a
request that would pass ``max_buffered_spans`` or ``max_traces``. A request that was answered
with success is never dropped afterwards: its spans are evaluated, flushed partial at shutdown
at the latest.

Traces whose root never arrives would hold their place until ``max_age``: a flood of them
would refuse everyone. So before refusing, the intake has the buffer hand on its oldest
rootless traces that arrived more than the grace period ago (evaluated partial, ``evicted``;
counter ``traces_evicted_rootless``) and stops counting their spans, until the request fits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Union

from tooltrail.convert.engine import Needs, decoding_for, engine
from tooltrail.convert.facts import FactSpan
from tooltrail.otlp import (
    DecodeError,
    Diagnostic,
    Limits,
    LogRecord,
    Span,
    decode_json_request,
    decode_request,
)
from tooltrail.otlp.decode.span import SpanHead
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.outcome import Accepted, ShuttingDown, Throttled, Undecodable

_log = logging.getLogger(__name__)

#: How many rejection reasons ``partial_success.error_message`` quotes.
_MAX_REASONS = 3


class ReceivedRequest:
    """The request a span came in: ``body`` (the decompressed request bytes, ``None`` when
    not kept), its ``encoding`` and whether it was read in the facts mode (``facts``, see
    ``decode_body``), so that what is kept of a judged trace for a revision can point into the
    body instead of copying its spans, and read it again the same way (``serve.kept``)."""

    __slots__ = ("body", "encoding", "facts")

    def __init__(self, body: bytes | None, encoding: str, facts: bool = False) -> None:
        self.body = body
        self.encoding = encoding
        self.facts = facts


class ReceivedSpan:
    """A decoded span (``decoded``, a ``tooltrail.otlp.Span``, or a ``SpanHead`` the core
    read outside ``dialects.INTEREST``, or in the facts mode a ``FactSpan``) in the
    ``TraceBuffer``, in the
    buffer's own item shape (``pipeline.buffer.Traced``): ``trace_id`` as an int and whether
    it is a ``local_root``. ``request`` and ``index``: the request it came in and its place
    among the spans ``decode_body`` reads from it (``None`` and ``-1``: not known).

    OTLP does not say whether a parent is remote, so a span with a parent id is never a root:
    a trace whose root span never reaches the receiver is evaluated partial at ``max_age``.
    """

    __slots__ = ("decoded", "trace_id", "local_root", "request", "index")

    def __init__(
        self,
        decoded: Span | SpanHead | FactSpan,
        trace_id: int,
        request: ReceivedRequest | None = None,
        index: int = -1,
    ) -> None:
        self.decoded = decoded
        self.trace_id = trace_id
        self.local_root = not decoded.parent_span_id
        self.request = request
        self.index = index


class ReceivedLog:
    """A log record (``decoded``, a ``tooltrail.otlp.LogRecord``) riding in the
    ``TraceBuffer`` with the spans of its trace, so the evaluation stage hands spans and
    records to ``to_eval_trace`` together. It is never a root: a trace is still complete only
    once its root span arrived, and a record of a trace not seen yet waits there for it.
    """

    __slots__ = ("decoded", "trace_id")
    local_root = False

    def __init__(self, decoded: LogRecord, trace_id: int) -> None:
        self.decoded = decoded
        self.trace_id = trace_id


#: What ``tooltrail serve`` holds in the trace buffer: its ``CompletedTrace[Received]``.
Received = Union[ReceivedSpan, ReceivedLog]  # noqa: UP007 - a runtime alias on Python 3.10


#: The receiver's decoding limits (the defaults): a kept body is decoded again with the same.
_LIMITS = Limits()
#: The Python decoders of a traces request body, by encoding: the reference, and the reader
#: of every body the core declines.
_DECODERS: dict[str, Callable[..., list[Span]]] = {
    "protobuf": decode_request,
    "json": decode_json_request,
}


def decode_body(
    encoding: str,
    body: bytes,
    diagnostics: list[Diagnostic] | None = None,
    *,
    wire: bool = False,
    facts: bool = False,
) -> Sequence[Span | SpanHead | FactSpan]:
    """The spans of a traces request, as the intake reads them (raises ``DecodeError``).

    The engine's request decoder reads the body when it has one and takes it (the compiled
    core's, ``convert.engine``); a body it declines (anything to report, an unusual
    spelling) and every body with ``wire`` (the dump and ``--forward`` write spans again,
    from their wire form) go to the Python decoders, which report exactly as before. The
    core hands out spans no dialect reads (``dialects.INTEREST``) as ``SpanHead``, without
    ``Span.wire``; with
    ``facts`` (the suite reads no content), the spans its port of the dialect rules covers as
    ``FactSpan`` (the engine's facts mode: classified in the core, not by the converter).

    Eager on the Python path: the converter reads a couple of dozen attributes per span,
    which costs less from a plain dict than from lazily decoded attributes (measured: ~15%
    faster overall). The same body gives the same spans in the same order either way (the
    core takes a body only when the Python path would read every span of it without a
    word): ``serve.kept`` decodes a kept body again."""
    if not wire and body.__class__ is bytes and len(body) <= _LIMITS.max_record_bytes:
        decoding = decoding_for(Needs(content=not facts), collected=False)
        reader = engine().request_decoder(encoding, decoding)
        if reader is not None:
            spans = reader(body, _ORIGIN, _LIMITS)
            if spans is not None:
                return spans
    return _DECODERS[encoding](
        body, origin=_ORIGIN, limits=_LIMITS, diagnostics=diagnostics, lazy=False
    )


#: The ``origin`` of every span the intake reads.
_ORIGIN = "request"
#: ``/stats``' ``reading_path`` when the intake keeps the wire form.
WIRE_PATH = "python (--dump or --forward: spans keep their wire form)"


def intake_reading_path(wire: bool) -> str:
    """How the intake reads requests, for ``/stats``: the engine's ``reading_path()``
    (``core <version>``, ``python``, ``python (the core is not installed)``), or ``WIRE_PATH``
    with ``wire``. Bodies the core declines are read by the Python path either way."""
    return WIRE_PATH if wire else engine().reading_path()


class TraceIntake:
    """``ingest(encoding, body)``: decode an export request and hand its spans to ``buffer``.

    ``buffer`` is anything with ``add(item)`` (the live ``TraceBuffer``). The evaluation
    stage calls ``release(trace_id, n)`` once it is done with ``n`` spans of a trace. With
    ``evict_rootless`` (and a buffer with ``hand_on_oldest_rootless`` and ``grace_s``), a
    request that would be refused first makes room by evicting rootless traces. With
    ``wire``, spans keep their wire form (``decode_body``): for the sinks that write them again;
    else they are decoded as the engine decodes for the suite's ``needs`` and a consumer that
    keeps its spans (``convert.engine.decoding_for``: the core's facts mode when no check reads
    content).

    Each span is handed on with the request it came in (``ReceivedRequest``; its body
    ``bytes`` only, not copied, and kept only while something holds the span).
    """

    def __init__(
        self,
        buffer: Any,
        counters: ReceiverCounters,
        *,
        max_buffered_spans: int,
        max_traces: int,
        retry_after: float,
        evict_rootless: bool = True,
        wire: bool = False,
        needs: Needs | None = None,
    ) -> None:
        self._buffer = buffer
        self._wire = wire
        decoding = decoding_for(needs or Needs(content=True), collected=False)
        self._facts = decoding.facts and not wire
        self._counters = counters
        self._max_spans = max_buffered_spans
        self._max_traces = max_traces
        self._retry_after = retry_after
        self._lock = threading.Lock()
        self._held_spans = 0
        self._released_spans = 0
        #: trace id -> spans of it taken and not yet released.
        self._held: dict[int, int] = {}
        #: trace id -> spans of it released at eviction, before the evaluation stage is done
        #: with them: its own release of them is not counted again.
        self._released_early: dict[int, int] = {}
        self._hand_on_rootless = (
            getattr(buffer, "hand_on_oldest_rootless", None) if evict_rootless else None
        )
        self._warn = ThrottledWarning(_log)
        self._closed = False

    @property
    def reading_path(self) -> str:
        return intake_reading_path(self._wire)

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
        if self._full():  # cheap early refusal before decoding
            raise self._throttled()
        diagnostics: list[Diagnostic] = []
        try:
            spans = decode_body(encoding, body, diagnostics, wire=self._wire, facts=self._facts)
        except DecodeError as exc:
            raise Undecodable(f"not an OTLP traces request: {exc}") from None
        reasons = [d.message for d in diagnostics if "rejected" in d.message]
        received, contexts = self._group_spans(
            spans, body if body.__class__ is bytes else None, encoding
        )
        self._admit(received, contexts, spans_received=len(received), spans_rejected=len(reasons))
        message = "; ".join(reasons[:_MAX_REASONS])
        if len(reasons) > _MAX_REASONS:
            message += f"; and {len(reasons) - _MAX_REASONS} more"
        return Accepted(len(received), len(reasons), message)

    def take_logs(self, records: list[LogRecord], **counts: int) -> int:
        """Hold ``records`` (each with a trace id) with their traces, under the same limits as
        spans (raises ``Throttled`` or ``ShuttingDown`` and takes none). Returns how many.
        ``counts`` are added to the counters once taken, before the buffer has them."""
        if self._closed:
            raise ShuttingDown("tooltrail serve is shutting down")
        if not records:
            if counts:
                self._counters.add(**counts)
            return 0
        if self._full():
            raise self._throttled()
        received, contexts = self._group_logs(records)
        self._admit(received, contexts, **counts)
        return len(received)

    def _admit(self, received: list[Received], contexts: dict[int, int], **counts: int) -> None:
        """Hand ``received`` to the buffer, or refuse all of it (``Throttled``). ``counts``
        are added to the counters first: a trace judged and released at once is never seen
        released before it is seen received."""
        with self._lock:
            if self._closed:
                raise ShuttingDown("tooltrail serve is shutting down")
            if not self._fits(len(received), contexts) and not self._evict_for(
                len(received), contexts
            ):
                raise self._throttled()
            self._held_spans += len(received)
            held = self._held
            for trace_id, count in contexts.items():
                held[trace_id] = held.get(trace_id, 0) + count
            if counts:
                self._counters.add(**counts)
            # Inside the lock: a request is either wholly in the buffer before shutdown
            # starts flushing it, or refused.
            add = self._buffer.add
            for item in received:
                add(item)

    def _full(self) -> bool:
        """No room for one more span, even after evicting rootless traces."""
        if self._held_spans < self._max_spans:
            return False
        with self._lock:
            return not self._evict_for(1, {})

    def _fits(self, spans: int, contexts: dict[int, int]) -> bool:
        """Whether a request of ``spans`` spans of the traces ``contexts`` may be taken now
        (lock held). When nothing is held, any request fits: one request always gets in."""
        if not self._held_spans:
            return True
        new_traces = sum(1 for t in contexts if t not in self._held)
        return (
            self._held_spans + spans <= self._max_spans
            and len(self._held) + new_traces <= self._max_traces
        )

    def _evict_for(self, spans: int, contexts: dict[int, int]) -> bool:
        """Evict the oldest rootless traces past the grace period (the buffer hands each on,
        partial ``evicted``; its spans stop counting here) until the request fits (lock
        held). False when it still does not."""
        hand_on = self._hand_on_rootless
        if hand_on is None:
            return False
        self._evict_while(hand_on, lambda: not self._fits(spans, contexts))
        return self._fits(spans, contexts)

    def evict_rootless(self, keep_spans: int) -> None:
        """Evict the oldest rootless traces past the grace period until at most ``keep_spans``
        spans are held (or none is left to evict). For a worker process, whose own limits are
        off: its router admits, and asks it to make room."""
        with self._lock:
            self._evict_while(
                self._buffer.hand_on_oldest_rootless, lambda: self._held_spans > keep_spans
            )

    def _evict_while(self, hand_on: Callable[[float], Any], short: Callable[[], bool]) -> None:
        """Evict rootless traces while ``short()`` (lock held); counted and warned about."""
        evicted = 0
        while short():
            handed = hand_on(self._buffer.grace_s)
            if handed is None:
                break
            trace_id, count = handed
            self._release_locked(trace_id, count)
            self._released_early[trace_id] = self._released_early.get(trace_id, 0) + count
            evicted += 1
        if evicted:
            self._counters.add(traces_evicted_rootless=evicted)
            self._warn.warn(
                "evicted",
                "tooltrail serve: buffer full; traces whose root has not arrived evaluated early "
                "as partial (reason evicted, counter traces_evicted_rootless)",
            )

    def release(self, trace_id: int, count: int) -> None:
        """The evaluation stage is done with ``count`` spans of ``trace_id``."""
        with self._lock:
            early = self._released_early.get(trace_id)
            if early is not None:  # released at eviction already
                absorbed = min(early, count)
                if early > absorbed:
                    self._released_early[trace_id] = early - absorbed
                else:
                    del self._released_early[trace_id]
                count -= absorbed
            if count:
                self._release_locked(trace_id, count)

    def _release_locked(self, trace_id: int, count: int) -> None:
        self._held_spans -= count
        self._released_spans += count
        left = self._held.get(trace_id, 0) - count
        if left > 0:
            self._held[trace_id] = left
        else:
            self._held.pop(trace_id, None)

    def _group_spans(
        self, spans: Sequence[Span | SpanHead | FactSpan], body: bytes | None, encoding: str
    ) -> tuple[list[Received], dict[int, int]]:
        """``spans`` wrapped for the buffer, each with its request and place in it, and how
        many there are of each trace."""
        request = ReceivedRequest(body, encoding, self._facts)
        trace_ids: dict[str, int] = {}
        counts: dict[int, int] = {}
        received: list[Received] = []
        append = received.append
        for index, span in enumerate(spans):
            trace_id = trace_ids.get(span.trace_id)
            if trace_id is None:
                trace_id = trace_ids[span.trace_id] = int(span.trace_id, 16)
            counts[trace_id] = counts.get(trace_id, 0) + 1
            append(ReceivedSpan(span, trace_id, request, index))
        return received, counts

    def _group_logs(self, records: list[LogRecord]) -> tuple[list[Received], dict[int, int]]:
        """``records`` wrapped for the buffer, and how many there are of each trace."""
        trace_ids: dict[str, int] = {}
        counts: dict[int, int] = {}
        received: list[Received] = []
        for record in records:
            trace_id = trace_ids.get(record.trace_id)
            if trace_id is None:
                trace_id = trace_ids[record.trace_id] = int(record.trace_id, 16)
            counts[trace_id] = counts.get(trace_id, 0) + 1
            received.append(ReceivedLog(record, trace_id))
        return received, counts

    def _throttled(self) -> Throttled:
        return Throttled(
            f"buffer full ({self._held_spans} spans of {len(self._held)} traces held); retry later",
            self._retry_after,
        )
