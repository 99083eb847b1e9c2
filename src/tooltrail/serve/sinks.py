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
from collections.abc import Callable, Mapping
from typing import Any

from tooltrail.otlp import LogRecord, OtlpFileWriter, Span
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.pipeline.inline import InlineEvaluator
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.redact import Redaction
from tooltrail.results import CaseResult
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import Received
from tooltrail.serve.logs_intake import logs_request
from tooltrail.serve.received_items import LogsSeen, ReceivedItems
from tooltrail.serve.redaction import redacted
from tooltrail.suite import TestSuite

_log = logging.getLogger(__name__)

#: Mode of the files the receiver creates (results, dumps): they hold customer data.
PRIVATE = 0o600


def create_private(path: str | os.PathLike[str]) -> None:
    """Create ``path`` readable by its owner only, unless it exists (then it is left as is)."""
    os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE))


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
    or ``dropped`` notice), in the live inline evaluator's line format, opened for appending.

    Lines are held and written together, whole, in one ``write`` (so several processes can
    share the file without interleaving their lines): when ``HELD_LINES`` or ``HELD_BYTES``
    are held, and at ``flush`` (the evaluator's, once the trace buffer has nothing more ready
    and before ``/stats`` answers; ``pipeline.inline``). One ``write`` a line let go of the
    interpreter's lock each time, and the receiver's other threads took it: that cost serve
    about an eighth of its CPU time and most of its p99 latency (docs/serve.md, "Where the
    server's CPU time goes")."""

    def __init__(self, path: str | os.PathLike[str], *, explanations: bool = False) -> None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.explanations = explanations
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
        self._lock = threading.Lock()
        self._held: list[bytes] = []
        self._held_bytes = 0

    def append(self, data: bytes) -> None:
        """Hold one whole line; write what is held once the bounds are reached. Raises
        ``OSError`` when that write fails (the held lines are then lost, counted by the
        caller)."""
        with self._lock:
            if self._fd is None:
                return
            self._held.append(data)
            self._held_bytes += len(data)
            if len(self._held) >= HELD_LINES or self._held_bytes >= HELD_BYTES:
                self._write_held()

    def flush(self) -> None:
        """Write the lines held (``OSError`` as for ``append``)."""
        with self._lock:
            if self._held:
                self._write_held()

    def close(self) -> None:
        """Write the lines held, then close (``OSError`` as for ``append``; closed anyway)."""
        with self._lock:
            if self._fd is None:
                return
            try:
                if self._held:
                    self._write_held()
            finally:
                os.close(self._fd)
                self._fd = None

    def _write_held(self) -> None:
        """The held lines in one ``write`` (lock held); let go of them whatever happens."""
        assert self._fd is not None
        data = b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        written = os.write(self._fd, data)
        while written < len(data):  # (a regular file takes all at once, bar a full disk)
            written += os.write(self._fd, data[written:])


#: Results lines held before they are written together (``ResultsFile``).
HELD_LINES = 64
HELD_BYTES = 256 * 1024


class ReceiverObserver:
    """What the receiver counts of the inline evaluator's work (``pipeline.observer``):
    ``/stats``'s evaluation counters, and a warning for traces given up unevaluated."""

    def __init__(self, counters: ReceiverCounters) -> None:
        self._counters = counters
        self._warn = ThrottledWarning(_log)

    def counted(self, deltas: Mapping[str, int]) -> None:
        counted = {k: v for k, v in deltas.items() if v and k in _COUNTED}
        if counted:  # (every judged trace counts ``traces_evaluated``, not a receiver counter)
            self._counters.add(**counted)

    def failed(self) -> None:
        self._counters.add(evaluation_errors=1, traces_evaluated=1)

    def judged(self, partial: bool, matched: bool) -> None:
        self._counters.add(
            traces_evaluated=1,
            traces_partial=1 if partial else 0,
            traces_unmatched=0 if matched else 1,
        )

    def first_verdict(self, results: list[CaseResult]) -> None:
        passed = sum(1 for r in results if r.passed)
        self._counters.add(cases_passed=passed, cases_failed=len(results) - passed)

    def dropped(self) -> None:
        """A trace the buffer gave up (``dropped_spans`` spans, none delivered) was counted
        and named by one results line: no accepted trace is silently missing."""
        self._warn.warn(
            "dropped",
            "tooltrail serve: traces given up unevaluated (counter traces_dropped; a results "
            "line with reason dropped names each)",
        )


def received_evaluator(
    suite: TestSuite | str | os.PathLike[str],
    counters: ReceiverCounters,
    items: ReceivedItems | None = None,
    *,
    results: ResultsFile | None = None,
    **options: Any,
) -> InlineEvaluator:
    """The live inline evaluator, fed decoded OTLP spans (and log records) instead of SDK
    spans: ``items`` (default: without logs, ``InlineEvaluator``'s cap on kept spans), its
    counts in ``counters`` too, its lines in ``results``; ``options``: ``InlineEvaluator``'s,
    but for ``max_kept_spans``, which is ``items.max_kept_items``.

    Pieces that arrive after their trace was judged (``late``: another process's spans, log
    records past ``logs_grace``) are merged with what was judged and judged again (a revision
    line), within the revision window and limits; past them they are counted and named in one
    ``late_unjudged`` line. Every piece is still dumped and forwarded. Log records are
    de-duplicated by ``serve.logs_intake.record_key`` (an exporter's retry re-sends them), spans by
    span id.
    """
    items = ReceivedItems(counters) if items is None else items
    return InlineEvaluator(
        suite,
        items=items,
        observer=ReceiverObserver(counters),
        results=results,
        max_kept_spans=items.max_kept_items,
        **options,
    )


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
