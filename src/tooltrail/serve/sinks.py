"""What happens to a received trace once the buffer hands it on: dump, score, release.

Each stage is a trace sink of the live path (``export_trace(trace)``, ``force_flush``,
``shutdown``), called by the ``TraceBuffer`` in order on its worker thread. A
``CompletedTrace[Received]`` here holds ``ReceivedSpan`` items (``serve.intake``, the buffer's
own item shape), each with its ``decoded`` span. Once the receiver has taken a logs request, a
trace may also hold ``ReceivedLog`` items (the content records of the trace): the evaluator
joins them to the spans, the dump writes them as a logs request, forwarding leaves them out.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from tooltrail.convert import to_eval_trace
from tooltrail.evaluate import CaseResult
from tooltrail.model import EvalTrace
from tooltrail.otlp import Diagnostic, LogRecord, OtlpFileWriter, Span
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.pipeline.inline import InlineEvaluator
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.redact import Redaction
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import Received, ReceivedLog
from tooltrail.serve.kept import BODY_BYTES_PER_KEPT_ITEM, KeptBodies, pack, unpack
from tooltrail.serve.logs import logs_request, record_key
from tooltrail.serve.redaction import redacted

_log = logging.getLogger(__name__)

#: Mode of the files the receiver creates (results, dumps): they hold customer data.
PRIVATE = 0o600


def create_private(path: str | os.PathLike[str]) -> None:
    """Create ``path`` readable by its owner only, unless it exists (then it is left as is)."""
    os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE))


class LogsSeen:
    """Whether the receiver has taken any logs request: until then no trace holds a log record,
    and every stage runs exactly as it would without logs support."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False


def spans_of(trace: CompletedTrace[Received]) -> list[Span | LogRecord]:
    """The decoded spans of a trace's items (and, among them, the ``LogRecord`` of every
    ``ReceivedLog``), in order. For the dump: with it the intake reads every span whole, with
    its wire form (``intake.decode_body``), never as a ``SpanHead``."""
    items: list[Any] = [received.decoded for received in trace.spans]
    return items


def split_logs(items: list[Span | LogRecord]) -> tuple[list[Span], list[LogRecord]]:
    """Spans and log records apart, each in arrival order."""
    spans: list[Span] = []
    records: list[LogRecord] = []
    for item in items:
        if isinstance(item, LogRecord):
            records.append(item)
        else:
            spans.append(item)
    return spans, records


class ResultsFile:
    """The JSON-lines results file, one line per verdict (and per revision, ``late_unjudged``
    or ``dropped`` notice), in the live inline evaluator's line format. Each line is one
    ``write`` to a file opened for appending, so several processes can share the file without
    interleaving their lines."""

    def __init__(self, path: str | os.PathLike[str], *, explanations: bool = False) -> None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.explanations = explanations
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
        self._lock = threading.Lock()

    def append(self, data: bytes) -> None:
        with self._lock:
            if self._fd is not None:
                os.write(self._fd, data)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class ReceivedTraceEvaluator(InlineEvaluator):
    """The live inline evaluator, fed decoded OTLP spans (and log records) instead of SDK spans.

    Pieces that arrive after their trace was judged (``late``: another process's spans, log
    records past ``logs_grace``) are merged with what was judged and judged again (a revision
    line), within the revision window and limits; past them they are counted and named in one
    ``late_unjudged`` line. Every piece is still dumped and forwarded. Log records are
    de-duplicated by ``serve.logs.record_key`` (an exporter's retry re-sends them), spans by
    span id.
    """

    def __init__(
        self,
        suite: Any,
        counters: ReceiverCounters,
        *,
        results: ResultsFile | None = None,
        logs: LogsSeen | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(suite, **kwargs)
        #: Request bodies the kept traces point into (``serve.kept``), bounded in bytes by
        #: the cap on kept items.
        self.bodies = KeptBodies(self.revisions.max_items * BODY_BYTES_PER_KEPT_ITEM)
        self._counters = counters
        self._results = results
        self._logs = logs
        self._log_warn = ThrottledWarning(_log)

    def _logs_seen(self) -> bool:
        return self._logs is not None and self._logs.seen

    def _convert(self, trace: CompletedTrace, items: list[Any], partial: bool) -> EvalTrace | None:
        decoded = [received.decoded for received in items]
        diagnostics: list[Diagnostic] | None = None
        if self._logs_seen():
            spans, records = split_logs(decoded)
            if records:
                if not spans:
                    self._orphaned(trace, records)
                    return None
                diagnostics = []
        eval_trace = to_eval_trace(decoded, diagnostics, usage=self.usage, content=self.content)
        if diagnostics:
            self._unjoined(trace, diagnostics)
        eval_trace.partial = eval_trace.partial or partial
        return eval_trace

    def _failed(self, trace: CompletedTrace) -> None:
        self._counters.add(evaluation_errors=1, traces_evaluated=1)

    def _judged(self, trace: CompletedTrace, eval_trace: EvalTrace, matched: bool) -> None:
        self._counters.add(
            traces_evaluated=1,
            traces_partial=1 if trace.partial else 0,
            traces_unmatched=0 if matched else 1,
        )

    def _pack(self, items: list[Any]) -> Any:
        """One ``bytes`` per judged trace, or a tuple of it and the request bodies its spans
        are read from again (``serve.kept``), which the garbage collector never walks; the
        items themselves only when they hold what it cannot keep exactly."""
        packed = pack(items, self.bodies)
        return items if packed is None else packed

    def _unpack(self, kept: Any, trace_id: int) -> list[Any]:
        if kept.__class__ is bytes or kept.__class__ is tuple:
            return unpack(kept, trace_id)
        return kept  # type: ignore[no-any-return]

    def _release(self, kept: Any) -> None:
        self.bodies.release(kept)

    def _unique(self, items: list[Any]) -> list[Any]:
        """The piece without repeated log records (a retried logs export); spans repeated by a
        retry are left to the converter, which keeps the first copy of each span id."""
        if not self._logs_seen():
            return items
        seen: set[Hashable] = set()
        unique: list[Any] = []
        repeated = 0
        for item in items:
            if isinstance(item, ReceivedLog):
                key = record_key(item.decoded)
                if key in seen:
                    repeated += 1
                    continue
                seen.add(key)
            unique.append(item)
        if repeated:
            self._count(log_records_duplicate=repeated)
        return unique

    def _key(self, item: Received) -> Hashable:
        if isinstance(item, ReceivedLog):
            return record_key(item.decoded)
        return item.decoded.span_id

    def _sizes(self, items: list[Any]) -> tuple[int, int]:
        records = sum(1 for item in items if isinstance(item, ReceivedLog))
        return len(items) - records, records

    def _duplicates(self, items: list[Any]) -> None:
        spans, records = self._sizes(items)
        self._count(spans_duplicate=spans, log_records_duplicate=records)

    def _late(self, trace: CompletedTrace) -> None:
        if self._logs_seen():
            records = self._sizes(trace.spans)[1]
            if records:
                self._count(log_records_late=records)

    def _count(self, **deltas: int) -> None:
        super()._count(**deltas)
        counted = {k: v for k, v in deltas.items() if v and k in _COUNTED}
        if counted:  # (every judged trace counts ``traces_evaluated``, not a receiver counter)
            self._counters.add(**counted)

    def _write_line(self, data: bytes) -> None:
        if self._results is not None:
            self._results.append(data)

    def export_dropped(self, trace: CompletedTrace) -> None:
        """A trace the buffer gave up (``dropped_spans`` spans, none delivered): counted, and
        named by one results line, so no accepted trace is silently missing."""
        super().export_dropped(trace)
        self._log_warn.warn(
            "dropped",
            "tooltrail serve: traces given up unevaluated (counter traces_dropped; a results "
            "line with reason dropped names each)",
        )

    def _orphaned(self, trace: CompletedTrace, records: list[LogRecord]) -> None:
        """Log records of a piece without spans: kept (a later piece with its spans is judged
        with them), counted ``log_records_orphaned`` until then."""
        self._counters.add(log_records_orphaned=len(records))
        self._log_warn.warn(
            "orphaned-logs",
            "tooltrail serve: log records of trace %s found no span of it (%s; counter "
            "log_records_orphaned)",
            trace.trace_id_hex,
            trace.reason,
        )

    def _unjoined(self, trace: CompletedTrace, diagnostics: list[Diagnostic]) -> None:
        unjoined = sum(1 for d in diagnostics if d.message.startswith("log record"))
        if unjoined:
            self._counters.add(log_records_unjoined=unjoined)
            self._log_warn.warn(
                "unjoined-logs",
                "tooltrail serve: %d log record(s) of trace %s name no model or agent span of "
                "it (counter log_records_unjoined)",
                unjoined,
                trace.trace_id_hex,
            )

    def shutdown(self) -> None:
        super().shutdown()
        if self._results is not None:
            self._results.close()

    def _first_verdict(self, results: list[CaseResult]) -> None:
        passed = sum(1 for r in results if r.passed)
        self._counters.add(cases_passed=passed, cases_failed=len(results) - passed)


#: Evaluator counts that are also receiver counters (``/stats``).
_COUNTED = frozenset(
    {
        "late_pieces",
        "traces_revised",
        "verdicts_changed",
        "late_spans_unjudged",
        "log_records_unjudged",
        "log_records_late",
        "log_records_duplicate",
        "spans_duplicate",
        "traces_test",
        "traces_test_skipped",
    }
)


class DumpSink:
    """Writes each received trace as one OTLP request to a file in the collector's format.

    Tool spans and log records are redacted first (``serve.redaction``). The file is created
    0600. Writes are buffered and flushed to the operating system every ``flush_interval``
    seconds: at the write that finds the interval passed, else by a timer, so a killed process
    loses at most the traces written in its last interval (no ``fsync``: a machine crash can
    lose what the system had not written to disk yet).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str = "json",
        logs: LogsSeen | None = None,
        redaction: Redaction | None = None,
        flush_interval: float = 1.0,
    ) -> None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        create_private(path)
        self.writer = OtlpFileWriter(path, format=format)  # type: ignore[arg-type]
        self._logs = logs
        self._rules = redaction or Redaction()
        self._interval = flush_interval
        self._last_flush = time.monotonic()
        self._unflushed = False
        self._stop = threading.Event()
        self._flusher = threading.Thread(
            target=self._flush_on_interval, name="tooltrail-dump-flush", daemon=True
        )
        self._flusher.start()

    def export_trace(self, trace: CompletedTrace) -> None:
        items = redacted(self._rules, spans_of(trace))
        if self._logs is None or not self._logs.seen:
            self.writer.write_spans(items)
        else:
            # The trace's log records follow its spans as a logs request: ``tooltrail eval``
            # over the dump joins them again.
            spans, records = split_logs(items)
            if spans:
                self.writer.write_spans(spans)
            if records:
                self.writer.write(logs_request(records))
        self._unflushed = True
        if time.monotonic() - self._last_flush >= self._interval:
            self._flush()

    def _flush_on_interval(self) -> None:
        while not self._stop.wait(self._interval):
            if self._unflushed:
                self._flush()

    def _flush(self) -> None:
        self._unflushed = False
        self._last_flush = time.monotonic()
        try:
            self.writer.flush()
        except ValueError:  # closed by shutdown meanwhile
            pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._flush()
        return True

    def shutdown(self) -> None:
        self._stop.set()
        self._flusher.join()
        self.writer.close()


class ReleaseSink:
    """The last stage: tells the intake these spans are done, so it may take more."""

    def __init__(self, release: Callable[[int, int], None]) -> None:
        self._release = release

    def export_trace(self, trace: CompletedTrace) -> None:
        self._release(trace.trace_id, len(trace.spans))

    def export_dropped(self, trace: CompletedTrace) -> None:
        """A trace the buffer gave up: its spans are gone, so the intake may take more."""
        self._release(trace.trace_id, trace.dropped_spans)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None
