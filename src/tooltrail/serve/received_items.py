"""The items of a received trace, as the inline evaluator reads and keeps them.

``tooltrail serve`` hands the trace buffer ``ReceivedSpan`` items (``serve.intake``), each
with its ``decoded`` span, and, once it has taken a logs request, ``ReceivedLog`` items (the
content records of the trace). ``ReceivedItems`` is their ``pipeline.trace_items.TraceItems``:
a trace is converted from the decoded spans with its log records joined to them; a judged
trace is kept packed (``serve.kept``: one ``bytes``, or the places of its spans in request
bodies held once, ``KeptBodies``); spans are told apart by span id, log records by
``serve.logs_intake.record_key`` (an exporter's retry re-sends both).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

from tooltrail.convert import to_eval_trace
from tooltrail.convert.decoded import is_log_record
from tooltrail.model import EvalTrace
from tooltrail.otlp import Diagnostic, LogRecord
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.pipeline.revisions import LIVE_MAX_KEPT_SPANS
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import Received, ReceivedLog
from tooltrail.serve.kept import BODY_BYTES_PER_KEPT_ITEM, KeptBodies, pack, unpack
from tooltrail.serve.logs_intake import record_key

#: The logger these warnings always had (the receiver's evaluation stage, ``serve.sinks``):
#: operators filter on it.
_log = logging.getLogger("tooltrail.serve.sinks")

#: What is kept of a judged received trace: ``serve.kept``'s packed forms, else the items
#: themselves (when they hold what ``pack`` cannot keep exactly).
ReceivedKept = bytes | tuple[object, ...] | list[Received]


class LogsSeen:
    """Whether the receiver has taken any logs request: until then no trace holds a log record,
    and every stage runs exactly as it would without logs support."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False


class ReceivedItems:
    """``TraceItems`` of ``tooltrail serve``'s buffer items (``Received``).

    ``logs``: whether log records can be among them yet (``None``: never); ``counters``: where
    the log records a conversion could not join are counted (``log_records_orphaned``,
    ``log_records_unjoined``). ``max_kept_items``: the evaluator's cap on kept items
    (``max_kept_spans``), which bounds the request bodies held for kept traces (``bodies``).
    """

    def __init__(
        self,
        counters: ReceiverCounters,
        *,
        logs: LogsSeen | None = None,
        max_kept_items: int = LIVE_MAX_KEPT_SPANS,
    ) -> None:
        self.max_kept_items = max_kept_items
        #: Request bodies the kept traces point into (``serve.kept``), bounded in bytes by
        #: the cap on kept items.
        self.bodies = KeptBodies(max_kept_items * BODY_BYTES_PER_KEPT_ITEM)
        self._counters = counters
        self._logs = logs
        self._warn = ThrottledWarning(_log)

    def _logs_seen(self) -> bool:
        return self._logs is not None and self._logs.seen

    def convert(
        self,
        trace: CompletedTrace[Received],
        items: list[Received],
        partial: bool,
        usage: bool,
        content: bool,
    ) -> EvalTrace | None:
        """The decoded spans, the log records among them joined to them; ``None`` for log
        records without a span yet (kept: a later piece with the spans is judged with them)."""
        decoded = [received.decoded for received in items]
        diagnostics: list[Diagnostic] | None = None
        if self._logs_seen():
            records = [item for item in decoded if is_log_record(item)]
            if records:
                if len(records) == len(decoded):  # no span of the trace yet
                    self._orphaned(trace, records)
                    return None
                diagnostics = []
        eval_trace = to_eval_trace(decoded, diagnostics, usage=usage, content=content)
        if diagnostics:
            self._unjoined(trace, diagnostics)
        eval_trace.partial = eval_trace.partial or partial
        return eval_trace

    def pack(self, items: list[Received]) -> ReceivedKept:
        """One ``bytes`` per judged trace, or a tuple of it and the request bodies its spans
        are read from again (``serve.kept``), which the garbage collector never walks; the
        items themselves only when they hold what it cannot keep exactly."""
        packed = pack(items, self.bodies)
        return items if packed is None else packed

    def unpack(self, kept: ReceivedKept, trace_id: int) -> list[Received]:
        if isinstance(kept, (bytes, tuple)):
            return unpack(kept, trace_id)
        return kept

    def release(self, kept: ReceivedKept) -> None:
        self.bodies.release(kept)

    def unique(self, items: list[Received]) -> list[Received]:
        """The piece without repeated log records (a retried logs export); spans repeated by a
        retry are left to the converter, which keeps the first copy of each span id."""
        if not self._logs_seen():
            return items
        seen: set[Hashable] = set()
        unique: list[Received] = []
        for item in items:
            if isinstance(item, ReceivedLog):
                key = record_key(item.decoded)
                if key in seen:
                    continue
                seen.add(key)
            unique.append(item)
        return unique

    def key(self, item: Received) -> Hashable:
        if isinstance(item, ReceivedLog):
            return record_key(item.decoded)
        return item.decoded.span_id

    def sizes(self, items: list[Received]) -> tuple[int, int]:
        records = sum(1 for item in items if isinstance(item, ReceivedLog))
        return len(items) - records, records

    def late_records(self, items: list[Received]) -> int:
        return self.sizes(items)[1] if self._logs_seen() else 0

    def _orphaned(self, trace: CompletedTrace[Received], records: list[LogRecord]) -> None:
        """Log records of a piece without spans: kept (a later piece with its spans is judged
        with them), counted ``log_records_orphaned`` until then."""
        self._counters.add(log_records_orphaned=len(records))
        self._warn.warn(
            "orphaned-logs",
            "tooltrail serve: log records of trace %s found no span of it (%s; counter "
            "log_records_orphaned)",
            trace.trace_id_hex,
            trace.reason,
        )

    def _unjoined(self, trace: CompletedTrace[Received], diagnostics: list[Diagnostic]) -> None:
        unjoined = sum(1 for d in diagnostics if d.message.startswith("log record"))
        if unjoined:
            self._counters.add(log_records_unjoined=unjoined)
            self._warn.warn(
                "unjoined-logs",
                "tooltrail serve: %d log record(s) of trace %s name no model or agent span of "
                "it (counter log_records_unjoined)",
                unjoined,
                trace.trace_id_hex,
            )
