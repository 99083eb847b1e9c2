"""``--workers N``: evaluation in N processes, spans routed to them by trace id.

Converting and scoring a trace is pure Python, so one process evaluates on one core. With
``workers`` > 1 the receiving process only splits each request by trace id
(``tooltrail.serve.shard``) and passes each part down a pipe to the worker that owns those
traces; every worker runs a whole ``TracePipeline`` (buffer, dump, forward, evaluation,
results, events) on its share. A trace never straddles two workers, so nothing changes in
what is evaluated, only where.

Admission stays in the router: it counts spans sent to workers minus spans they report as
done, and refuses (503 / RESOURCE_EXHAUSTED) past ``max_buffered_spans``. Workers publish
their counters into shared memory; ``stats()`` adds them up. Shutdown sends each worker an
end marker behind everything already sent, so all accepted spans are evaluated before it
exits. Each worker writes its own dump file (``traces.w1.jsonl`` next to ``--dump
traces.jsonl``); the results file is shared (one append per line).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import queue
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tooltrail.otlp import Limits, LogRecord
from tooltrail.serve.config import ServeConfig
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.logs import decode_logs, logs_request
from tooltrail.serve.outcome import Accepted, ShuttingDown, Throttled
from tooltrail.serve.pipeline import count_logs
from tooltrail.serve.shard import split_json, split_protobuf, worker_of
from tooltrail.suite import TestSuite

_log = logging.getLogger(__name__)

#: Counters each worker publishes, in this order, into its row of the shared array.
WORKER_STATS = (
    "traces_evaluated",
    "traces_partial",
    "late_pieces",
    "traces_unmatched",
    "cases_passed",
    "cases_failed",
    "evaluation_errors",
    "scores_sent",
    "scores_failed",
    "sink_errors",
    "traces_held",
    "spans_released",
    "traces_forwarded",
    "traces_not_forwarded",
    "log_records_late",
    "log_records_orphaned",
    "log_records_unjoined",
    "traces_dropped",
    "traces_revised",
    "verdicts_changed",
    "late_spans_unjudged",
    "log_records_unjudged",
    "spans_duplicate",
    "log_records_duplicate",
    "revision_spans_kept",
    "revision_traces_kept",
    "revision_traces_evicted",
)
_RELEASED = WORKER_STATS.index("spans_released")
_PUBLISH_EVERY_S = 0.1
_MAX_REASONS = 3
_END = b""
#: First byte of a logs part (a traces part, a serialized request, starts with 0x0a).
_LOGS = b"L"


def worker_path(path: Path, index: int) -> Path:
    """``traces.jsonl`` -> ``traces.w1.jsonl`` for worker 1 (its own dump file)."""
    name = path.name
    stem, dot, suffix = name.partition(".")
    return path.with_name(f"{stem}.w{index}{dot}{suffix}")


def _worker_main(
    index: int, config: ServeConfig, suite: TestSuite, conn: Any, shared: Any, ready: Any
) -> None:
    """A worker process: a ``TracePipeline`` fed from ``conn`` until the end marker."""
    # The router decides when to stop; a Ctrl-C on the terminal reaches the whole group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from tooltrail.checks.plugins import load_plugins
    from tooltrail.serve.pipeline import TracePipeline

    load_plugins(config.plugins)  # a spawned process starts with only the built-in checks
    own = replace(
        config,
        workers=1,
        dump=worker_path(config.dump, index) if config.dump is not None else None,
    )
    pipeline = TracePipeline(own, suite, admission=False)
    row = (index - 1) * len(WORKER_STATS)
    stop = threading.Event()

    def publish() -> None:
        stats = pipeline.stats()
        for i, key in enumerate(WORKER_STATS):
            shared[row + i] = int(stats.get(key, 0))

    def publisher() -> None:
        while not stop.wait(_PUBLISH_EVERY_S):
            publish()

    thread = threading.Thread(target=publisher, name="tooltrail-worker-stats", daemon=True)
    thread.start()
    ready.set()
    try:
        while True:
            try:
                data = conn.recv_bytes()
            except EOFError:
                break
            if data == _END:
                break
            try:
                if data[:1] == _LOGS:
                    pipeline.ingest_logs("protobuf", data[1:])
                else:
                    pipeline.ingest("protobuf", data)
            except Exception:  # noqa: BLE001 - one bad part must not stop the worker
                _log.exception("worker %d could not take a request part", index)
    finally:
        pipeline.shutdown()
        stop.set()
        thread.join()
        publish()
        conn.close()


class _Worker:
    """The router's end of one worker: its process, pipe, send queue and sender thread."""

    def __init__(self, index: int, config: ServeConfig, suite: TestSuite, shared: Any) -> None:
        context = mp.get_context("spawn")
        ours, theirs = context.Pipe(duplex=False)
        self.ready = context.Event()
        self.index = index
        self.process = context.Process(
            target=_worker_main,
            args=(index, config, suite, ours, shared, self.ready),
            name=f"tooltrail-serve-worker-{index}",
            daemon=True,
        )
        self.process.start()
        ours.close()
        self._conn = theirs
        self._queue: queue.Queue[bytes] = queue.Queue()
        self.sent_spans = 0
        self.broken = False
        self._thread = threading.Thread(target=self._send_all, daemon=True)
        self._thread.start()

    def send(self, part: bytes, spans: int) -> None:
        self.sent_spans += spans
        self._queue.put(part)

    def _send_all(self) -> None:
        while True:
            part = self._queue.get()
            try:
                self._conn.send_bytes(part)
            except (OSError, ValueError):
                self.broken = True
                _log.error("tooltrail serve: worker %d is gone; its spans are lost", self.index)
                return
            if part == _END:
                return

    def end(self, timeout: float) -> None:
        """Send the end marker behind everything queued; wait for the worker to finish."""
        self._queue.put(_END)
        self._thread.join(timeout)
        self.process.join(timeout)
        if self.process.is_alive():
            _log.error("tooltrail serve: worker %d did not stop in time", self.index)
            self.process.terminate()
        self._conn.close()


class WorkerPool:
    """Same interface as ``TracePipeline`` (``ingest``, ``close``, ``stats``, ``shutdown``),
    backed by ``config.workers`` processes."""

    def __init__(self, config: ServeConfig, suite: TestSuite) -> None:
        self.config = config
        self.counters = ReceiverCounters()
        self._n = config.workers
        self._shared = mp.get_context("spawn").Array("q", self._n * len(WORKER_STATS), lock=False)
        self._limits = Limits()
        self._logs_seen = False
        self._closed = False
        self._lock = threading.Lock()
        self._workers = [_Worker(i + 1, config, suite, self._shared) for i in range(self._n)]
        deadline = time.monotonic() + 60
        for worker in self._workers:
            if not worker.ready.wait(max(0.0, deadline - time.monotonic())):
                self.shutdown()
                raise RuntimeError(f"worker {worker.index} did not start")

    def _held_spans(self) -> int:
        sent = sum(w.sent_spans for w in self._workers)
        released = sum(self._shared[i * len(WORKER_STATS) + _RELEASED] for i in range(self._n))
        return max(0, sent - released)

    def ingest(self, encoding: str, body: bytes) -> Accepted:
        if self._closed:
            raise ShuttingDown("tooltrail serve is shutting down")
        if any(w.broken or not w.process.is_alive() for w in self._workers):
            raise ShuttingDown("an evaluation worker of tooltrail serve has stopped")
        held = self._held_spans()
        if held >= self.config.max_buffered_spans:
            raise self._throttled(held)
        if encoding == "json":
            split = split_json(body, self._n, self._limits)
        else:
            split = split_protobuf(body, self._n)
        with self._lock:
            if self._closed:
                raise ShuttingDown("tooltrail serve is shutting down")
            held = self._held_spans()
            if held and held + split.accepted > self.config.max_buffered_spans:
                raise self._throttled(held)
            for worker, part, spans in zip(self._workers, split.parts, split.spans, strict=True):
                if part is not None:
                    worker.send(part, spans)
        reasons = split.rejected
        self.counters.add(spans_received=split.accepted, spans_rejected=len(reasons))
        message = "; ".join(reasons[:_MAX_REASONS])
        if len(reasons) > _MAX_REASONS:
            message += f"; and {len(reasons) - _MAX_REASONS} more"
        return Accepted(split.accepted, len(reasons), message)

    def ingest_logs(self, encoding: str, body: bytes) -> Accepted:
        """Decode a logs request here; each worker gets the content records of its traces
        (routed by trace id exactly as spans are), re-encoded as one protobuf request."""
        if self._closed:
            raise ShuttingDown("tooltrail serve is shutting down")
        if any(w.broken or not w.process.is_alive() for w in self._workers):
            raise ShuttingDown("an evaluation worker of tooltrail serve has stopped")
        held = self._held_spans()
        if held >= self.config.max_buffered_spans:
            raise self._throttled(held)
        decoded = decode_logs(encoding, body, self._limits)
        groups: list[list[LogRecord]] = [[] for _ in range(self._n)]
        for record in decoded.records:
            groups[worker_of(bytes.fromhex(record.trace_id), self._n)].append(record)
        # The first logs request reaches every worker, so each starts waiting for log records.
        empty = None if self._logs_seen else _LOGS
        parts = [_LOGS + logs_request(g).SerializeToString() if g else empty for g in groups]
        taken = len(decoded.records)
        with self._lock:
            if self._closed:
                raise ShuttingDown("tooltrail serve is shutting down")
            held = self._held_spans()
            if held and held + taken > self.config.max_buffered_spans:
                raise self._throttled(held)
            for worker, part, group in zip(self._workers, parts, groups, strict=True):
                if part is not None:
                    worker.send(part, len(group))
            self._logs_seen = True
        return count_logs(self.counters, decoded, taken)

    def _throttled(self, held: int) -> Throttled:
        return Throttled(
            f"buffer full ({held} spans held by {self._n} workers); retry later",
            self.config.retry_after,
        )

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def healthy(self) -> bool:
        return all(w.process.is_alive() and not w.broken for w in self._workers)

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.counters.snapshot()
        for i, key in enumerate(WORKER_STATS):
            stats[key] = sum(self._shared[w * len(WORKER_STATS) + i] for w in range(self._n))
        stats["spans_held"] = self._held_spans()
        stats["workers"] = self._n
        stats["worker_pids"] = [w.process.pid for w in self._workers]
        return stats

    def shutdown(self) -> None:
        """Every worker evaluates what it was sent (incomplete traces partial), then exits."""
        self.close()
        timeout = max(60.0, self.config.max_age)
        for worker in self._workers:
            worker.end(timeout)
