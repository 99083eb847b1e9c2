"""``TraceBuffer``: holds ended spans per trace until the trace is complete, then hands it on.

A trace is complete when a local root span (no parent, or a remote parent) has ended, every
span of the trace this process saw start has ended, and a grace period for late children has
passed. The whole trace then goes to every sink in one call, on the buffer's own worker thread.

Nothing is dropped silently. Bounds (traces in flight, spans per trace, age) are enforced by
flushing a trace early, marked partial with the reason; ``force_flush`` and ``shutdown``
deliver everything held. A span that arrives for a trace already handed on is delivered as
a further partial piece (reason ``late``, ``continued``), which the inline evaluator merges
with what it judged of the trace to revise its verdict. Every such event is counted
(``stats()``) and summarised in a warning at most once per interval.

Memory is bounded whatever the arrival rate: all traces held or waiting for the sinks
together hold at most ``max_buffered_spans`` spans. Past it the buffer gives whole traces up
(newest waiting first): their spans are released, the trace is counted (``traces_dropped``)
and a notice (``CompletedTrace`` without spans, reason ``dropped``) goes to every sink with an
``export_dropped`` method, so the inline evaluator names it in the results. Sinks run on their
own delivery thread (``tooltrail-trace-buffer``; the grouping runs on
``tooltrail-trace-grouping``), so a slow sink never stops the grouping;
a sink call that has not returned after ``sink_timeout_s`` is reported stuck, and a fresh
delivery thread goes on with the other sinks. ``shutdown`` returns within
``shutdown_timeout_s`` whatever the sinks do.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Generic, Protocol, TypeVar, Union

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from tooltrail.pipeline import sdk
from tooltrail.pipeline.throttle import ThrottledWarning

_log = logging.getLogger(__name__)

#: Reasons a trace is handed on; every one but ``complete`` means ``partial``.
COMPLETE = "complete"
MAX_AGE = "max_age"
MAX_TRACES = "max_traces"
MAX_SPANS = "max_spans"
FLUSH = "flush"
SHUTDOWN = "shutdown"
LATE = "late"
#: The buffer gave the trace up (memory bound, or shutdown's time limit): no spans delivered.
DROPPED = "dropped"
#: Handed on early by ``hand_on_oldest_rootless`` (a receiver making room for new traces).
EVICTED = "evicted"
PARTIAL_REASONS = (MAX_AGE, MAX_TRACES, MAX_SPANS, FLUSH, SHUTDOWN, LATE, DROPPED, EVICTED)

DEFAULT_GRACE_S = 0.5
DEFAULT_MAX_AGE_S = 300.0
DEFAULT_MAX_TRACES = 10_000
DEFAULT_MAX_SPANS = 10_000
DEFAULT_LOG_INTERVAL_S = 60.0
#: Spans held at once, all traces together (grouping and waiting for the sinks).
DEFAULT_MAX_BUFFERED_SPANS = 262_144
#: A sink call running longer than this is reported stuck; the others go on without it.
DEFAULT_SINK_TIMEOUT_S = 10.0
#: The longest ``shutdown`` waits for the sinks (delivery, flush, their own shutdown).
DEFAULT_SHUTDOWN_TIMEOUT_S = 10.0
#: The worker groups queued spans at least this often.
_TICK_S = 0.05
#: Queued starts/ends that wake the worker early, and that make an ending thread group them.
_WAKE_AT = 4096
_MAX_QUEUED = 16384
#: Share of ``shutdown_timeout_s`` spent delivering; the rest flushes and shuts sinks down.
_DRAIN_SHARE = 0.7
#: At the end of shutdown's delivery time, a sink call running this long is left behind.
_SHUTDOWN_STUCK_S = 0.1
#: Notices of given-up traces kept for the sinks (24 bytes each); past it, counted only.
_MAX_NOTICES = 1 << 20
#: Past this many notices waiting, they go to the sinks before the traces waiting.
_NOTICES_FIRST = 1 << 16


class Traced(Protocol):
    """tooltrail's own shape of an item of a trace, beside the SDK's spans: what the buffer
    reads of it. ``tooltrail serve`` hands its decoded spans and log records to the buffer in
    this shape (``serve.intake``); the application's SDK spans are read through ``sdk``."""

    @property
    def trace_id(self) -> int: ...

    @property
    def local_root(self) -> bool:
        """Whether the item is a root of its trace here: no parent, or a remote one. A trace
        is complete once a local root ended (and nothing it saw start is still open)."""
        ...


#: What the buffer holds: the application's ended SDK spans, or items of tooltrail's shape.
BufferItem = Union[ReadableSpan, Traced]  # noqa: UP007 - a runtime alias on Python 3.10
#: The items of a ``CompletedTrace``: what its buffer was given.
ItemT = TypeVar("ItemT")

_traced_trace_id: Callable[[Any], int | None] = attrgetter("trace_id")
_traced_link: Callable[[Any], tuple[int, bool] | None] = attrgetter("trace_id", "local_root")


def readers_of(
    kind: type,
) -> tuple[Callable[[Any], int | None], Callable[[Any], tuple[int, bool] | None]]:
    """How the buffer reads an item of class ``kind``: its trace id, and ``(trace id, local
    root)``. SDK spans through ``sdk``'s readers (the one place that reads SDK internals),
    any other item as ``Traced``."""
    if issubclass(kind, ReadableSpan):
        readers = sdk.readers_for(kind)
        return readers.trace_id, readers.trace_link
    return _traced_trace_id, _traced_link


def is_local_root(item: BufferItem) -> bool:
    """Whether ``item`` is a local root, read as the buffer reads it."""
    link = readers_of(item.__class__)[1](item)
    return link is not None and link[1]


@dataclass(slots=True)
class CompletedTrace(Generic[ItemT]):
    """The items of one trace (or, when ``partial``, of one piece of it), in end order:
    SDK spans in-process, ``serve.intake``'s received spans and log records in a receiver."""

    trace_id: int
    spans: list[ItemT]
    partial: bool = False
    #: ``complete``, or why the trace was handed on early (see ``PARTIAL_REASONS``).
    reason: str = COMPLETE
    #: For a notice of a trace the buffer gave up (``reason == "dropped"``, no ``spans``):
    #: how many spans of it were released undelivered.
    dropped_spans: int = 0
    #: A further piece of a trace handed on (or given up) before: its sinks may merge it with
    #: what they had of the trace (reason ``late``, or the reason it was handed on early).
    continued: bool = False
    #: A further piece of a trace the buffer gave up before: the notice of that trace
    #: (``export_dropped``, which may reach the sinks after this piece) names it; a sink has
    #: nothing of it to merge the piece with.
    given_up: bool = False
    #: Set by the inline evaluator on the piece it hands on once judged (``forward_to``): the
    #: ``pipeline.verdicts.TraceVerdict`` a forwarding sink puts on the root span.
    verdict: Any = None

    @property
    def trace_id_hex(self) -> str:
        return f"{self.trace_id:032x}"


class TraceSink(Protocol):
    """Receives complete traces. Called from one thread at a time; must not block for long.

    A sink may also have ``export_dropped(trace)``: it is then told of every trace the buffer
    gave up (a ``CompletedTrace`` without spans, ``reason == "dropped"``); and ``idle()``:
    called once the buffer has delivered what was ready and nothing more waits, so that a
    sink holding writes for a burst of traces (results lines) writes them then.
    """

    def export_trace(self, trace: CompletedTrace[Any]) -> None: ...

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
    #: Traces given up whole (``max_buffered_spans``, or shutdown's time limit) and their spans.
    traces_dropped: int = 0
    spans_dropped: int = 0
    #: Given-up traces past ``max_traces`` unsent notices: counted here only.
    drop_notices_lost: int = 0
    #: Sink calls that ran past ``sink_timeout_s`` (each also logged once).
    sinks_stuck: int = 0
    #: Traces a stuck sink did not get (the others did).
    sink_skipped: int = 0
    #: Spans waiting for the sinks or being delivered (included in ``spans_held``).
    spans_waiting: int = 0


@dataclass(slots=True, eq=False)
class _Held:
    spans: list[BufferItem] = field(default_factory=list)
    #: Spans seen starting and not yet ended.
    open: int = 0
    root_ended: bool = False
    born: float = 0.0
    #: When the trace is complete (root ended, nothing open) plus grace; else None.
    due: float | None = None
    #: Part of a trace already partly handed on.
    continued: bool = False
    #: Part of a trace the buffer gave up before (its notice names it to the sinks).
    given_up: bool = False


class TraceBuffer(SpanProcessor):
    """A span processor (or the last stage of ``ToolArgsProcessor``) feeding ``sinks``.

    ``grace_s``: wait after completion for late children. ``max_age_s``: a trace held longer
    is handed on partial. ``max_traces``: traces held at once (the oldest goes first).
    ``max_spans``: spans held per trace (the piece so far goes on partial).
    ``max_buffered_spans``: spans held at once, all traces together, waiting ones included;
    past it whole traces are given up (counted, and a notice to ``export_dropped``).
    ``sink_timeout_s``: a sink call running longer is reported stuck and skipped until it
    returns. ``shutdown_timeout_s``: the longest ``shutdown`` waits for the sinks.
    """

    def __init__(
        self,
        *sinks: TraceSink,
        grace_s: float = DEFAULT_GRACE_S,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        max_traces: int = DEFAULT_MAX_TRACES,
        max_spans: int = DEFAULT_MAX_SPANS,
        log_interval_s: float = DEFAULT_LOG_INTERVAL_S,
        max_buffered_spans: int = DEFAULT_MAX_BUFFERED_SPANS,
        sink_timeout_s: float = DEFAULT_SINK_TIMEOUT_S,
        shutdown_timeout_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S,
    ) -> None:
        if grace_s < 0 or max_age_s <= 0 or max_traces < 1 or max_spans < 1:
            raise ValueError("grace_s >= 0, max_age_s > 0, max_traces >= 1, max_spans >= 1")
        if max_buffered_spans < 1 or sink_timeout_s <= 0 or shutdown_timeout_s <= 0:
            raise ValueError("max_buffered_spans >= 1, sink_timeout_s > 0, shutdown_timeout_s > 0")
        self.sinks: tuple[TraceSink, ...] = tuple(sinks)
        self.grace_s = grace_s
        self.max_age_s = max_age_s
        self.max_traces = max_traces
        self.max_spans = max_spans
        self.max_buffered_spans = max_buffered_spans
        self.sink_timeout_s = sink_timeout_s
        self.shutdown_timeout_s = shutdown_timeout_s
        self.log_interval_s = log_interval_s
        self._warn = ThrottledWarning(_log, log_interval_s)
        #: Span class -> how its trace id (starts) and trace link (ends) are read.
        self._trace_ids: dict[type, Callable[[Any], int | None]] = {}
        self._trace_links: dict[type, Callable[[Any], tuple[int, bool] | None]] = {}
        self._init_state()
        self._received = 0
        self._delivered = 0
        self._complete = 0
        self._partial: dict[str, int] = dict.fromkeys(PARTIAL_REASONS, 0)
        self._window: dict[str, int] = dict.fromkeys(PARTIAL_REASONS, 0)
        self._after_shutdown = 0
        self._sink_errors = 0
        self._dropped_spans = 0
        self._notices_lost = 0
        self._sinks_stuck = 0
        self._sink_skipped = 0
        self._last_summary = time.monotonic()
        self._shutdown = False
        #: Set once shutdown grouped the last spans: later ones are counted, not delivered.
        self._closed = False
        self._start_threads()
        if hasattr(os, "register_at_fork"):
            ref = weakref.WeakMethod(self._after_fork)

            def after_in_child() -> None:
                method = ref()
                if method is not None:
                    method()

            os.register_at_fork(after_in_child=after_in_child)

    def _init_state(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._traces: dict[int, _Held] = {}
        #: Held traces that are pieces of traces already handed on (``_Held.continued``).
        self._pieces_held = 0
        #: (due, trace id) in due order; stale entries are skipped.
        self._pending: deque[tuple[float, int]] = deque()
        #: Traces waiting for the sinks, and notices of traces given up (both under the lock).
        self._ready: deque[CompletedTrace[BufferItem]] = deque()
        self._notices = _Notices()
        #: Spans in held traces, waiting ones and the trace being delivered.
        self._buffered = 0
        #: Spans in ``_ready`` and in the trace being delivered.
        self._waiting = 0
        #: Traces (or notices) taken by a delivery thread and not yet through every sink.
        self._in_delivery = 0
        #: Spans started and spans ended, not yet grouped into traces.
        self._starts: deque[Span] = deque()
        self._ends: deque[BufferItem] = deque()
        #: Traces let go of: trace id -> (open spans, root ended, given up, whether any span
        #: was handed on; without one, the next piece is the trace's first, not a late one).
        self._handed: OrderedDict[int, tuple[int, bool, bool, bool]] = OrderedDict()
        self._delivery = _Delivery()

    def _start_threads(self) -> None:
        self._worker = threading.Thread(
            target=self._run, name="tooltrail-trace-grouping", daemon=True
        )
        self._worker.start()
        self._start_delivery(None)

    def _after_fork(self) -> None:
        """In a forked child: the parent's spans are the parent's; start empty, with a worker."""
        self._init_state()
        if not self._shutdown:
            self._start_threads()

    # -- span lifecycle (application threads) ------------------------------------------------
    #
    # The application's threads only append to a queue (one atomic deque append each); the
    # worker groups the queued starts and ends into traces. Under a flood the queue is bounded:
    # past ``_MAX_QUEUED`` ends the ending thread groups them itself.

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if not self._shutdown:
            self._starts.append(span)

    def add(self, span: BufferItem) -> None:
        """Hold ``span`` (an ended SDK span, or an item of tooltrail's shape, ``Traced``)
        with its trace."""
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

    #: The SDK's door (an ended span of the application): the same method, no extra call.
    on_end = add

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
        # This loop sees every span: SDK spans are read through ``pipeline.sdk``'s readers, any
        # other item as ``Traced`` (say, a received OTLP span); chosen once per class.
        trace_ids, trace_links = self._trace_ids, self._trace_links
        pop_start = self._starts.popleft
        while True:
            try:
                started = pop_start()
            except IndexError:
                break
            kind: type = started.__class__
            read_trace_id = trace_ids.get(kind)
            if read_trace_id is None:
                read_trace_id = trace_ids[kind] = readers_of(kind)[0]
            trace_id = read_trace_id(started)
            if trace_id is None:
                continue
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
            read_trace_link = trace_links.get(kind)
            if read_trace_link is None:
                read_trace_link = trace_links[kind] = readers_of(kind)[1]
            link = read_trace_link(span)
            if link is None:
                continue
            trace_id, local_root = link
            held = traces.get(trace_id)
            if held is None:
                held = self._new_trace(trace_id, now)
            received += 1
            held.spans.append(span)
            if held.open:
                held.open -= 1
            if local_root:
                held.root_ended = True
            if len(held.spans) >= self.max_spans:
                self._hand_on(trace_id, held, MAX_SPANS)
            elif held.root_ended and not held.open:
                held.due = due
                self._pending.append((due, trace_id))
        self._received += received
        self._buffered += received
        if self._buffered > self.max_buffered_spans:
            self._make_room()

    def _new_trace(self, trace_id: int, now: float) -> _Held:
        """A new entry (lock held); hands the oldest on when full."""
        if len(self._traces) >= self.max_traces:
            oldest_id = next(iter(self._traces))
            oldest = self._traces[oldest_id]
            self._hand_on(oldest_id, oldest, COMPLETE if oldest.due is not None else MAX_TRACES)
        held = _Held(born=now)
        earlier = self._handed.get(trace_id)
        if earlier is not None:
            held.open, held.root_ended, held.given_up, held.continued = earlier
            self._pieces_held += held.continued
        self._traces[trace_id] = held
        return held

    def _hand_on(self, trace_id: int, held: _Held, reason: str) -> None:
        """Move a held trace to the delivery queue (lock held)."""
        del self._traces[trace_id]
        if held.continued:
            self._pieces_held -= 1
            if reason in (COMPLETE, DROPPED, EVICTED):
                reason = LATE  # its trace was handed on (or given up) already: a piece
        partial = reason != COMPLETE
        if held.spans:
            self._ready.append(
                CompletedTrace(
                    trace_id,
                    held.spans,
                    partial,
                    reason,
                    continued=held.continued,
                    given_up=held.given_up,
                )
            )
            self._waiting += len(held.spans)
            if partial:
                self._count_partial(reason)
            else:
                self._complete += 1
        handed_any = held.continued or bool(held.spans)
        self._handed[trace_id] = (held.open, held.root_ended, held.given_up, handed_any)
        self._handed.move_to_end(trace_id)
        while len(self._handed) > 4 * self.max_traces:
            self._handed.popitem(last=False)

    def _count_partial(self, reason: str) -> None:
        self._partial[reason] += 1
        self._window[reason] += 1

    def _make_room(self) -> None:
        """Give whole traces up until the spans held fit ``max_buffered_spans`` (lock held):
        first the held pieces of traces already handed on (their trace has its verdict, or
        was named given up, already), then the newest waiting for the sinks, then the oldest
        held that holds an ended span (a notice tells the sinks of each). A trace goes whole,
        or stays.

        Pieces go first so that which traces survive does not depend on how far the delivery
        thread has got: a complete trace waiting for the sinks is never given up for the
        stragglers of another."""
        while self._buffered > self.max_buffered_spans:
            piece = self._oldest_held_piece()
            if piece is not None:
                trace_id, held = piece
                self._hand_on(trace_id, held, DROPPED)  # a continued trace: reason late
                self._give_up(self._ready.pop())
            elif self._ready:
                self._give_up(self._ready.pop())
            else:
                oldest = self._oldest_holding_spans()
                if oldest is None:
                    return  # what is left is being delivered
                trace_id, held = oldest
                self._hand_on(trace_id, held, COMPLETE if held.due is not None else DROPPED)
                self._give_up(self._ready.pop())

    def _oldest_holding_spans(self) -> tuple[int, _Held] | None:
        """The oldest held trace with an ended span (lock held). A trace whose spans have
        only started holds nothing to free: given up, it would be let go unnamed, and its
        spans would come later as a piece of a trace never judged."""
        for trace_id, held in self._traces.items():
            if held.spans:
                return trace_id, held
        return None

    def _oldest_held_piece(self) -> tuple[int, _Held] | None:
        """The oldest held piece of a trace already handed on (lock held); ``None`` fast
        when there is none."""
        if not self._pieces_held:
            return None
        for trace_id, held in self._traces.items():
            if held.continued and held.spans:
                return trace_id, held
        return None

    def _mark_given_up(self, trace_id: int) -> None:
        """Later pieces of ``trace_id`` are pieces of a trace given up (lock held)."""
        handed = self._handed.get(trace_id)
        if handed is not None:
            self._handed[trace_id] = (handed[0], handed[1], True, handed[3])
        held = self._traces.get(trace_id)
        if held is not None:
            held.given_up = True

    def _give_up(self, trace: CompletedTrace[BufferItem]) -> None:
        """Release a waiting trace's spans undelivered; count it; queue its notice (lock held).
        A ``late`` piece adds its spans to ``spans_dropped`` only: its trace was counted, and
        named to the sinks, once already."""
        spans = len(trace.spans)
        self._waiting -= spans
        self._buffered -= spans
        self._dropped_spans += spans
        if trace.reason == LATE:
            return
        self._mark_given_up(trace.trace_id)
        if trace.partial:  # it was counted under its reason already: it now counts as dropped
            self._partial[trace.reason] -= 1
            self._window[trace.reason] -= 1
        else:
            self._complete -= 1
        self._count_partial(DROPPED)
        if len(self._notices) < _MAX_NOTICES:
            self._notices.append(trace.trace_id, spans)
        else:
            self._notices_lost += 1
        self._warn.warn(
            "dropped",
            "tooltrail: the sinks fall behind; traces given up past max_buffered_spans=%d "
            "(counters traces_dropped, spans_dropped)",
            self.max_buffered_spans,
        )
        self._delivery.ready.set()

    def hand_on_oldest_rootless(self, min_age_s: float) -> tuple[int, int] | None:
        """Hand on, partial (``evicted``), the oldest held trace whose root has not ended and
        that arrived at least ``min_age_s`` ago; its ``(trace id, spans)``, or ``None`` when
        there is none. For a caller that must make room now (``tooltrail serve``'s admission)
        rather than wait ``max_age_s``."""
        with self._lock:
            if self._closed:
                return None
            self._group()
            arrived_by = time.monotonic() - min_age_s
            for trace_id, held in self._traces.items():
                if held.born > arrived_by:
                    return None  # held in arrival order: every later one is younger
                if not held.root_ended and held.spans:
                    spans = len(held.spans)
                    self._hand_on(trace_id, held, EVICTED)
                    self._delivery.ready.set()
                    return trace_id, spans
            return None

    # -- the worker ---------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self._next_wakeup())
            self._wake.clear()
            stopping = self._shutdown
            self._collect()
            self._watch_delivery()
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
        if self._ready:
            self._delivery.ready.set()

    # -- delivery (its own thread; a stuck sink gets a successor thread) ---------------------

    def _start_delivery(self, resume: tuple[CompletedTrace[BufferItem], int] | None) -> None:
        delivery = self._delivery
        thread = threading.Thread(
            target=self._deliver_run,
            args=(delivery, delivery.generation, resume),
            name="tooltrail-trace-buffer",
            daemon=True,
        )
        delivery.thread = thread
        thread.start()

    def _take(self) -> CompletedTrace[BufferItem] | None:
        """The next trace for the sinks: waiting traces first (each one delivered saves its
        spans from being given up), notices of given-up traces when none waits or when
        many pile up."""
        with self._lock:
            if self._notices and (not self._ready or len(self._notices) > _NOTICES_FIRST):
                trace_id, spans = self._notices.popleft()
                trace: CompletedTrace[BufferItem] = CompletedTrace(
                    trace_id=trace_id, spans=[], partial=True, reason=DROPPED, dropped_spans=spans
                )
            elif self._ready:
                trace = self._ready.popleft()
            else:
                return None
            self._in_delivery += 1
            return trace

    def _deliver_run(
        self,
        delivery: _Delivery,
        generation: int,
        resume: tuple[CompletedTrace[BufferItem], int] | None,
    ) -> None:
        """Give each waiting trace to every sink in order, until ``stop`` or replaced."""
        if resume is not None and not self._deliver_one(delivery, generation, *resume):
            return
        delivered = resume is not None
        while True:
            trace = self._take()
            if trace is None:
                if delivered:
                    self._sinks_idle()
                    delivered = False
                if delivery.stop:
                    return
                delivery.ready.wait(_TICK_S)
                delivery.ready.clear()
                continue
            if not self._deliver_one(delivery, generation, trace, 0):
                return
            delivered = True

    def _sinks_idle(self) -> None:
        """Tell the sinks with ``idle`` (``TraceSink``) that nothing more is ready; a sink
        reported stuck is left alone until it returns."""
        for index, sink in enumerate(self.sinks):
            idle = getattr(sink, "idle", None)
            if idle is None or index in self._delivery.stuck:
                continue
            try:
                idle()
            except Exception:  # noqa: BLE001 - a sink must not stop the others
                self._sink_failed(sink, "when told nothing more is ready")

    def _sink_failed(self, sink: TraceSink, when: str) -> None:
        self._sink_errors += 1
        name = type(sink).__name__
        self._warn.warn(f"sink:{name}", "tooltrail: sink %s failed %s", name, when)

    def _deliver_one(
        self, delivery: _Delivery, generation: int, trace: CompletedTrace, start: int
    ) -> bool:
        """``trace`` to sinks ``start``... (a notice to those with ``export_dropped``). False
        when this thread was replaced while a sink was stuck: the successor finishes."""
        notice = not trace.spans and trace.reason == DROPPED
        for index in range(start, len(self.sinks)):
            sink = self.sinks[index]
            method = getattr(sink, "export_dropped", None) if notice else sink.export_trace
            if method is None:
                continue
            with delivery.lock:
                if index in delivery.stuck:
                    self._sink_skipped += 1
                    continue
                delivery.calling = (index, time.monotonic(), trace)
            try:
                method(trace)
            except Exception:  # noqa: BLE001 - a sink must not stop the others
                self._sink_failed(sink, "on a trace")
            with delivery.lock:
                if delivery.generation != generation:
                    delivery.stuck.discard(index)
                    _log.warning(
                        "tooltrail: sink %s returned after being reported stuck",
                        type(sink).__name__,
                    )
                    return False
                delivery.calling = None
        with self._lock:
            spans = len(trace.spans)
            self._delivered += spans
            self._waiting -= spans
            self._buffered -= spans
            self._in_delivery -= 1
        return True

    def _watch_delivery(self, limit_s: float | None = None) -> None:
        """A sink call running past ``limit_s`` (default ``sink_timeout_s``): report the sink
        stuck and start a successor delivery thread that goes on without it."""
        delivery = self._delivery
        with delivery.lock:
            calling = delivery.calling
            if calling is None:
                return
            index, since, trace = calling
            waited = time.monotonic() - since
            if waited < (self.sink_timeout_s if limit_s is None else limit_s):
                return
            delivery.stuck.add(index)
            delivery.calling = None
            delivery.generation += 1
            self._sinks_stuck += 1
            self._start_delivery((trace, index + 1))
        _log.warning(
            "tooltrail: sink %s has not returned for %.1f s; traces go on to the other sinks "
            "without it until it does (counter sinks_stuck)",
            type(self.sinks[index]).__name__,
            waited,
        )

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
        self._delivery.ready.set()

    def _wait_delivered(self, deadline: float) -> bool:
        """Wait until nothing waits for the sinks; False if ``deadline`` passed first."""
        while True:
            with self._lock:
                if not self._ready and not self._notices and not self._in_delivery:
                    return True
            if time.monotonic() >= deadline:
                return False
            self._watch_delivery()  # the worker may be gone (shutdown): watch from here
            self._delivery.ready.set()
            time.sleep(0.002)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Deliver every held span now (incomplete traces partial, ``flush``), then flush sinks."""
        deadline = time.monotonic() + timeout_millis / 1000
        with self._lock:
            self._hand_on_all(FLUSH)
        if not self._wait_delivered(deadline):
            return False
        return self._flush_sinks(deadline)

    def _flush_sinks(self, deadline: float) -> bool:
        flushed = True
        for index, sink in enumerate(self.sinks):
            if index in self._delivery.stuck:
                flushed = False
                continue
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
        """Deliver everything held (incomplete traces partial, ``shutdown``), stop, shut sinks.

        Returns within ``shutdown_timeout_s``: what the sinks have not taken by then is given
        up (counted, a notice to ``export_dropped``), and a sink that does not return is
        reported and left behind.
        """
        started = time.monotonic()
        deadline = started + self.shutdown_timeout_s
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            self._hand_on_all(SHUTDOWN)
            self._closed = True
        self._wake.set()
        self._worker.join(timeout=max(0.0, deadline - time.monotonic()))
        if not self._wait_delivered(started + _DRAIN_SHARE * self.shutdown_timeout_s):
            with self._lock:
                while self._ready:
                    self._give_up(self._ready.popleft())
            # The notices go on without a sink that holds the delivery up now.
            self._watch_delivery(_SHUTDOWN_STUCK_S)
            self._wait_delivered(deadline)
            self._watch_delivery(_SHUTDOWN_STUCK_S)
        delivery = self._delivery
        delivery.stop = True
        delivery.ready.set()
        self._finish_sinks(deadline)

    def _finish_sinks(self, deadline: float) -> None:
        """Flush and shut down every sink that is not stuck, on a helper thread, so a sink
        that blocks in either cannot hold ``shutdown`` past ``deadline``."""

        def finish() -> None:
            self._flush_sinks(deadline)
            for index, sink in enumerate(self.sinks):
                if index in self._delivery.stuck:
                    continue
                try:
                    sink.shutdown()
                except Exception:  # noqa: BLE001
                    self._sink_errors += 1

        helper = threading.Thread(target=finish, name="tooltrail-sink-shutdown", daemon=True)
        helper.start()
        helper.join(timeout=max(0.1, deadline - time.monotonic()))
        if helper.is_alive():
            self._sinks_stuck += 1
            _log.warning(
                "tooltrail: a sink did not flush and shut down within shutdown_timeout_s=%.1f s;"
                " leaving it behind (counter sinks_stuck)",
                self.shutdown_timeout_s,
            )
        stuck = [type(self.sinks[i]).__name__ for i in sorted(self._delivery.stuck)]
        if stuck:
            _log.warning(
                "tooltrail: sink(s) %s still stuck at shutdown; not flushed or shut down",
                ", ".join(stuck),
            )

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
                spans_held=self._buffered,
                traces_dropped=self._partial[DROPPED],
                spans_dropped=self._dropped_spans,
                drop_notices_lost=self._notices_lost,
                sinks_stuck=self._sinks_stuck,
                sink_skipped=self._sink_skipped,
                spans_waiting=self._waiting,
            )


class _Notices:
    """A FIFO of (trace id, spans) of given-up traces, 24 bytes each (chunks of arrays):
    a flood of them must not cost what the traces would have."""

    _CHUNK = 3 * 4096

    def __init__(self) -> None:
        self._chunks: deque[array[int]] = deque()
        self._head = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, trace_id: int, spans: int) -> None:
        if not self._chunks or len(self._chunks[-1]) >= self._CHUNK:
            self._chunks.append(array("Q"))
        self._chunks[-1].extend((trace_id >> 64, trace_id & _LOW_64, spans))
        self._count += 1

    def popleft(self) -> tuple[int, int]:
        chunk, head = self._chunks[0], self._head
        high, low, spans = chunk[head], chunk[head + 1], chunk[head + 2]
        self._head = head + 3
        if self._head >= len(chunk):
            self._chunks.popleft()
            self._head = 0
        self._count -= 1
        return (high << 64) | low, spans


_LOW_64 = (1 << 64) - 1


@dataclass(eq=False)
class _Delivery:
    """The delivery thread's state, shared with the watchdog (``lock`` guards the rest)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Wakes the delivery thread: something is waiting.
    ready: threading.Event = field(default_factory=threading.Event)
    #: Bumped when a thread is replaced; a thread whose generation is old stops.
    generation: int = 0
    #: (sink index, since, trace) of the sink call running now.
    calling: tuple[int, float, CompletedTrace] | None = None
    #: Sinks whose call has not returned: skipped until it does.
    stuck: set[int] = field(default_factory=set)
    stop: bool = False
    thread: threading.Thread | None = None


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
