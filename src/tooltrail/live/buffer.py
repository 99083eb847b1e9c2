"""``TraceBuffer``: holds ended spans per trace until the trace is complete, then hands it on.

A trace is complete when a local root span (no parent, or a remote parent) has ended, every
span of the trace this process saw start has ended, and a grace period for late children has
passed. The whole trace then goes to every sink in one call, on the buffer's own worker thread.

Nothing is dropped silently. Bounds (traces in flight, spans per trace, age) are enforced by
flushing a trace early, marked partial with the reason; ``force_flush`` and ``shutdown``
deliver everything held. A span that arrives for a trace already handed on is delivered as
a further partial piece (reason ``late``). Every such event is counted (``stats()``) and
summarised in a warning at most once per interval.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from tooltrail.live.calls import SDK_LAYOUT_KNOWN
from tooltrail.live.throttle import ThrottledWarning

_log = logging.getLogger(__name__)

#: Reasons a trace is handed on; every one but ``complete`` means ``partial``.
COMPLETE = "complete"
MAX_AGE = "max_age"
MAX_TRACES = "max_traces"
MAX_SPANS = "max_spans"
FLUSH = "flush"
SHUTDOWN = "shutdown"
LATE = "late"
PARTIAL_REASONS = (MAX_AGE, MAX_TRACES, MAX_SPANS, FLUSH, SHUTDOWN, LATE)

DEFAULT_GRACE_S = 0.5
DEFAULT_MAX_AGE_S = 300.0
DEFAULT_MAX_TRACES = 10_000
DEFAULT_MAX_SPANS = 10_000
DEFAULT_LOG_INTERVAL_S = 60.0
#: The worker groups queued spans at least this often.
_TICK_S = 0.05
#: Queued starts/ends that wake the worker early, and that make an ending thread group them.
_WAKE_AT = 4096
_MAX_QUEUED = 65536


@dataclass(slots=True)
class CompletedTrace:
    """The spans of one trace (or, when ``partial``, of one piece of it), in end order."""

    trace_id: int
    spans: list[ReadableSpan]
    partial: bool = False
    #: ``complete``, or why the trace was handed on early (see ``PARTIAL_REASONS``).
    reason: str = COMPLETE

    @property
    def trace_id_hex(self) -> str:
        return f"{self.trace_id:032x}"


class TraceSink(Protocol):
    """Receives complete traces. Called from one thread at a time; must not block for long."""

    def export_trace(self, trace: CompletedTrace) -> None: ...

    def force_flush(self, timeout_millis: int = 30000) -> bool: ...

    def shutdown(self) -> None: ...


@dataclass(frozen=True)
class BufferStats:
    """Counters since the buffer was created, and what it holds now."""

    spans_received: int
    spans_delivered: int
    traces_complete: int
    traces_partial: int
    partial_by_reason: dict[str, int]
    #: Spans that ended after ``shutdown``: counted, not delivered.
    spans_after_shutdown: int
    sink_errors: int
    traces_held: int
    spans_held: int


@dataclass(slots=True, eq=False)
class _Held:
    spans: list[ReadableSpan] = field(default_factory=list)
    #: Spans seen starting and not yet ended.
    open: int = 0
    root_ended: bool = False
    born: float = 0.0
    #: When the trace is complete (root ended, nothing open) plus grace; else None.
    due: float | None = None
    #: Part of a trace already partly handed on.
    continued: bool = False


class TraceBuffer(SpanProcessor):
    """A span processor (or the last stage of ``ToolArgsProcessor``) feeding ``sinks``.

    ``grace_s``: wait after completion for late children. ``max_age_s``: a trace held longer
    is handed on partial. ``max_traces``: traces held at once (the oldest goes first).
    ``max_spans``: spans held per trace (the piece so far goes on partial).
    """

    def __init__(
        self,
        *sinks: TraceSink,
        grace_s: float = DEFAULT_GRACE_S,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        max_traces: int = DEFAULT_MAX_TRACES,
        max_spans: int = DEFAULT_MAX_SPANS,
        log_interval_s: float = DEFAULT_LOG_INTERVAL_S,
    ) -> None:
        if grace_s < 0 or max_age_s <= 0 or max_traces < 1 or max_spans < 1:
            raise ValueError("grace_s >= 0, max_age_s > 0, max_traces >= 1, max_spans >= 1")
        self.sinks: tuple[TraceSink, ...] = tuple(sinks)
        self.grace_s = grace_s
        self.max_age_s = max_age_s
        self.max_traces = max_traces
        self.max_spans = max_spans
        self.log_interval_s = log_interval_s
        self._warn = ThrottledWarning(_log, log_interval_s)
        self._init_state()
        self._received = 0
        self._delivered = 0
        self._complete = 0
        self._partial: dict[str, int] = dict.fromkeys(PARTIAL_REASONS, 0)
        self._window: dict[str, int] = dict.fromkeys(PARTIAL_REASONS, 0)
        self._after_shutdown = 0
        self._sink_errors = 0
        self._last_summary = time.monotonic()
        self._shutdown = False
        #: Set once shutdown grouped the last spans: later ones are counted, not delivered.
        self._closed = False
        self._start_worker()
        if hasattr(os, "register_at_fork"):
            ref = weakref.WeakMethod(self._after_fork)

            def after_in_child() -> None:
                method = ref()
                if method is not None:
                    method()

            os.register_at_fork(after_in_child=after_in_child)

    def _init_state(self) -> None:
        self._lock = threading.Lock()
        self._deliver_lock = threading.Lock()
        self._wake = threading.Event()
        self._traces: dict[int, _Held] = {}
        #: (due, trace id) in due order; stale entries are skipped.
        self._pending: deque[tuple[float, int]] = deque()
        self._ready: deque[CompletedTrace] = deque()
        #: Spans started and spans ended, not yet grouped into traces.
        self._starts: deque[Span] = deque()
        self._ends: deque[ReadableSpan] = deque()
        #: Traces partly or wholly handed on: trace id -> (open spans, root ended).
        self._handed: OrderedDict[int, tuple[int, bool]] = OrderedDict()

    def _start_worker(self) -> None:
        self._worker = threading.Thread(
            target=self._run, name="tooltrail-trace-buffer", daemon=True
        )
        self._worker.start()

    def _after_fork(self) -> None:
        """In a forked child: the parent's spans are the parent's; start empty, with a worker."""
        self._init_state()
        if not self._shutdown:
            self._start_worker()

    # -- span lifecycle (application threads) ------------------------------------------------
    #
    # The application's threads only append to a queue (one atomic deque append each); the
    # worker groups the queued starts and ends into traces. Under a flood the queue is bounded:
    # past ``_MAX_QUEUED`` ends the ending thread groups them itself.

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if not self._shutdown:
            self._starts.append(span)

    def on_end(self, span: ReadableSpan) -> None:
        ends = self._ends
        ends.append(span)
        if self._shutdown:
            self._strand()
            return
        queued = len(ends)
        if queued == _WAKE_AT:
            self._wake.set()
        elif queued > _MAX_QUEUED:
            with self._lock:
                self._group()

    def _strand(self) -> None:
        with self._lock:
            self._strand_locked()

    def _strand_locked(self) -> None:
        """Spans that ended after shutdown took the last of them: counted, not delivered."""
        self._starts.clear()
        stranded = 0
        while self._ends:
            self._ends.popleft()
            stranded += 1
        if stranded:
            self._after_shutdown += stranded
            self._warn.warn(
                "after-shutdown", "tooltrail: spans ended after shutdown are not delivered"
            )

    def _group(self) -> None:
        """Sort every queued start and end into its trace (lock held)."""
        if self._closed:
            self._strand_locked()
            return
        traces = self._traces
        now = time.monotonic()
        due = now + self.grace_s
        # Every end counted here was queued after its start: taking the count of ends first,
        # then every start, never sees an end before its start.
        ends = len(self._ends)
        # This loop sees every span: SDK spans have their fields read directly; any other
        # object with ``.context.trace_id`` and ``.parent`` (say, a received OTLP span) works.
        sdk = _SDK_CLASSES
        pop_start = self._starts.popleft
        while True:
            try:
                started = pop_start()
            except IndexError:
                break
            kind: type = started.__class__
            fast = sdk.get(kind)
            if fast is None:
                fast = sdk[kind] = _is_sdk_span_class(kind)
            context = started._context if fast else started.context
            if context is None:
                continue
            trace_id = context[0] if fast else context.trace_id
            held = traces.get(trace_id)
            if held is None:
                held = self._new_trace(trace_id, now)
            held.open += 1
            held.due = None
        pop_end = self._ends.popleft
        received = 0
        for _ in range(ends):
            span = pop_end()
            kind = span.__class__
            fast = sdk.get(kind)
            if fast is None:
                fast = sdk[kind] = _is_sdk_span_class(kind)
            context = span._context if fast else span.context
            if context is None:
                continue
            trace_id = context[0] if fast else context.trace_id
            held = traces.get(trace_id)
            if held is None:
                held = self._new_trace(trace_id, now)
            received += 1
            held.spans.append(span)
            if held.open:
                held.open -= 1
            parent = span._parent if fast else span.parent
            if parent is None or (parent[2] if fast else parent.is_remote):
                held.root_ended = True
            if len(held.spans) >= self.max_spans:
                self._hand_on(trace_id, held, MAX_SPANS)
            elif held.root_ended and not held.open:
                held.due = due
                self._pending.append((due, trace_id))
        self._received += received

    def _new_trace(self, trace_id: int, now: float) -> _Held:
        """A new entry (lock held); hands the oldest on when full."""
        if len(self._traces) >= self.max_traces:
            oldest_id = next(iter(self._traces))
            oldest = self._traces[oldest_id]
            self._hand_on(oldest_id, oldest, COMPLETE if oldest.due is not None else MAX_TRACES)
        held = _Held(born=now)
        earlier = self._handed.get(trace_id)
        if earlier is not None:
            held.open, held.root_ended = earlier
            held.continued = True
        self._traces[trace_id] = held
        return held

    def _hand_on(self, trace_id: int, held: _Held, reason: str) -> None:
        """Move a held trace to the delivery queue (lock held)."""
        del self._traces[trace_id]
        if held.continued and reason == COMPLETE:
            reason = LATE
        partial = reason != COMPLETE
        if held.spans:
            self._ready.append(CompletedTrace(trace_id, held.spans, partial, reason))
            if partial:
                self._partial[reason] += 1
                self._window[reason] += 1
            else:
                self._complete += 1
        self._handed[trace_id] = (held.open, held.root_ended)
        self._handed.move_to_end(trace_id)
        while len(self._handed) > 4 * self.max_traces:
            self._handed.popitem(last=False)

    # -- the worker ---------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self._next_wakeup())
            self._wake.clear()
            stopping = self._shutdown
            self._collect()
            self._deliver()
            self._summarise()
            if stopping:
                return

    def _next_wakeup(self) -> float:
        check = max(0.005, min(_TICK_S, self.max_age_s / 4, self.grace_s or _TICK_S))
        pending = self._pending
        if pending:
            try:
                return max(0.0, min(check, pending[0][0] - time.monotonic()))
            except IndexError:
                pass
        return check

    def _collect(self) -> None:
        """Group what is queued, then hand on every trace that is due or too old."""
        with self._lock:
            self._group()
            now = time.monotonic()
            pending = self._pending
            while pending and pending[0][0] <= now:
                due, trace_id = pending.popleft()
                held = self._traces.get(trace_id)
                if held is not None and held.due == due:
                    self._hand_on(trace_id, held, COMPLETE)
            too_old = now - self.max_age_s
            while self._traces:
                trace_id = next(iter(self._traces))
                held = self._traces[trace_id]
                if held.born > too_old:
                    break
                self._hand_on(trace_id, held, COMPLETE if held.due is not None else MAX_AGE)

    def _deliver(self) -> None:
        """Give every ready trace to every sink (one delivering thread at a time)."""
        with self._deliver_lock:
            while True:
                try:
                    trace = self._ready.popleft()
                except IndexError:
                    return
                for sink in self.sinks:
                    try:
                        sink.export_trace(trace)
                    except Exception:  # noqa: BLE001 - a sink must not stop the others
                        self._sink_errors += 1
                        self._warn.warn(
                            f"sink:{type(sink).__name__}",
                            "tooltrail: sink %s failed on a trace",
                            type(sink).__name__,
                        )
                self._delivered += len(trace.spans)

    def _summarise(self) -> None:
        now = time.monotonic()
        if now - self._last_summary < self.log_interval_s:
            return
        self._last_summary = now
        with self._lock:
            window = {k: v for k, v in self._window.items() if v}
            self._window = dict.fromkeys(PARTIAL_REASONS, 0)
        if window:
            detail = ", ".join(f"{k}={v}" for k, v in sorted(window.items()))
            _log.warning(
                "tooltrail: %d traces handed on partial (%s)", sum(window.values()), detail
            )

    # -- flushing ---------------------------------------------------------------------------

    def _hand_on_all(self, reason: str) -> None:
        """Move every held trace to the delivery queue (lock held)."""
        self._group()
        for trace_id in list(self._traces):
            held = self._traces[trace_id]
            complete = held.due is not None or (held.root_ended and not held.open)
            self._hand_on(trace_id, held, COMPLETE if complete else reason)
        self._pending.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Deliver every held span now (incomplete traces partial, ``flush``), then flush sinks."""
        deadline = time.monotonic() + timeout_millis / 1000
        with self._lock:
            self._hand_on_all(FLUSH)
        self._deliver()
        return self._flush_sinks(deadline)

    def _flush_sinks(self, deadline: float) -> bool:
        flushed = True
        for sink in self.sinks:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                return False
            try:
                flushed = sink.force_flush(left_ms) is not False and flushed
            except Exception:  # noqa: BLE001
                self._sink_errors += 1
                flushed = False
        return flushed

    def shutdown(self) -> None:
        """Deliver everything held (incomplete traces partial, ``shutdown``), stop, shut sinks."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            self._hand_on_all(SHUTDOWN)
            self._closed = True
        self._wake.set()
        self._worker.join(timeout=30)
        self._deliver()
        self._flush_sinks(time.monotonic() + 30)
        for sink in self.sinks:
            try:
                sink.shutdown()
            except Exception:  # noqa: BLE001
                self._sink_errors += 1

    # -- counters -----------------------------------------------------------------------------

    def stats(self) -> BufferStats:
        with self._lock:
            self._group()
            return BufferStats(
                spans_received=self._received,
                spans_delivered=self._delivered,
                traces_complete=self._complete,
                traces_partial=sum(self._partial.values()),
                partial_by_reason=dict(self._partial),
                spans_after_shutdown=self._after_shutdown,
                sink_errors=self._sink_errors,
                traces_held=len(self._traces),
                spans_held=sum(len(h.spans) for h in self._traces.values()),
            )


#: Span classes seen by the buffer -> whether their fields can be read directly.
_SDK_CLASSES: dict[type, bool] = {}


def _is_sdk_span_class(kind: type) -> bool:
    return SDK_LAYOUT_KNOWN and issubclass(kind, ReadableSpan)


def sinks_of(items: Iterable[Any]) -> tuple[TraceSink, ...]:
    """Sinks from a mix of ``TraceSink`` objects and plain ``callable(trace)`` functions."""
    out: list[TraceSink] = []
    for item in items:
        out.append(item if hasattr(item, "export_trace") else CallbackSink(item))
    return tuple(out)


class CallbackSink:
    """A sink calling ``fn(trace)`` for each complete trace."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def export_trace(self, trace: CompletedTrace) -> None:
        self.fn(trace)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None
