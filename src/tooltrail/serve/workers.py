"""``--workers N``: evaluation in N processes, spans routed to them by trace id.

Converting and scoring a trace is pure Python, so one process evaluates on one core. With
``workers`` > 1 the receiving process only splits each request by trace id
(``tooltrail.serve.shard``) and passes each part down a pipe to the worker that owns those
traces; every worker runs a whole ``TracePipeline`` (buffer, dump, forward, evaluation,
results, events) on its share. A trace never straddles two workers, so nothing changes in
what is evaluated, only where.

Admission stays in the router: it counts spans sent to workers minus spans they report as
done, and refuses (503 / RESOURCE_EXHAUSTED) past ``max_buffered_spans``. Refusing, it asks
every worker (a shared slot each) to evict rootless traces past the grace period down to its
share of half the limit, as one process's admission would, until half the limit is held again:
a rootless flood cannot keep complete traces out until ``max_age``. Workers publish
their counters into shared memory; ``stats()`` adds them up. Shutdown sends each worker an
end marker behind everything already sent, so all accepted spans are evaluated before it
exits. Each worker writes its own dump file (``traces.w1.jsonl`` next to ``--dump
traces.jsonl``); the results file is shared (one append per line).

No process outlives the router: a worker says it is ready down a pipe (a multiprocessing
``Event`` could leave it blocked for good on a router killed while waiting), start-up stops
every worker it started when it fails or a signal asks it to stop, ``shutdown`` is also run
at exit, and a worker whose router is gone stops by itself (``tooltrail.serve.parent``).
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
import os
import queue
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tooltrail.otlp import Limits, LogRecord
from tooltrail.pipeline.spend_window import SpendState
from tooltrail.serve.config import ServeConfig
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import intake_reading_path
from tooltrail.serve.logs_intake import decode_logs, logs_request
from tooltrail.serve.outcome import Accepted, ShuttingDown, Throttled
from tooltrail.serve.parent import ParentGone, ParentWatch
from tooltrail.serve.production import (
    flat_sampling,
    has_window,
    sampling_keys,
    sampling_of,
    spend_window,
)
from tooltrail.serve.shard import split_json, split_protobuf, worker_of
from tooltrail.serve.signals import StartCancelled
from tooltrail.serve.stages import buffer_shutdown_timeout, logs_accepted, logs_counts
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
    "traces_evicted_rootless",
    "traces_revised",
    "verdicts_changed",
    "late_spans_unjudged",
    "log_records_unjudged",
    "spans_duplicate",
    "log_records_duplicate",
    "revision_spans_kept",
    "revision_traces_kept",
    "revision_traces_evicted",
    "revision_bodies_held",
    "revision_body_bytes_held",
    "revision_bodies_refused",
    "judge_queue_waiting",
    "judge_queue_spans",
    "judge_queue_in_progress",
    "judge_queue_judged",
    "judge_queue_full",
    "judge_queue_dropped",
    "judge_calls",
    "judge_cached",
    "judge_skipped",
    "judge_errors",
    "judge_input_tokens",
    "judge_output_tokens",
    "console_lines",
    "console_lines_left_out",
    "traces_test",
    "traces_test_skipped",
)
_RELEASED = WORKER_STATS.index("spans_released")
_PUBLISH_EVERY_S = 0.1
#: Seconds ``stats()`` waits for the lock of the workers' counter rows.
_ROWS_LOCK_S = 0.5
_MAX_REASONS = 3
_END = b""
_READY = b"ready"
#: Seconds a worker may take to start (spawn, imports, plug-ins), and to reach its end
#: marker at shutdown on top of evaluating what it holds.
_START_S = 60.0
_POLL_S = 0.05
#: A worker's slot in the shared "room" array when its router asks for nothing.
_NO_REQUEST = -1
#: First byte of a logs part (a traces part, a serialized request, starts with 0x0a).
_LOGS = b"L"


def write_row(shared: Any, row: int, values: list[int]) -> None:
    """A worker's counters into its row of ``shared``, whole under the array's lock, so
    ``/stats`` never adds half of one snapshot to half of the one before (a trace counted
    evaluated, its cases not yet)."""
    with shared.get_lock():
        shared.get_obj()[row : row + len(values)] = values


def read_rows(shared: Any, wait_s: float = _ROWS_LOCK_S) -> list[int]:
    """Every worker's counter row, each whole. A worker killed while writing its row holds
    the lock for good: past ``wait_s`` the rows are read without it."""
    lock = shared.get_lock()
    locked = lock.acquire(timeout=wait_s)
    try:
        return list(shared.get_obj())
    finally:
        if locked:
            lock.release()


def stat_keys(suite: TestSuite) -> tuple[str, ...]:
    """A worker's counter row: ``WORKER_STATS``, then the suite's sampled checks' counters
    (``serve.production``), the same in the router and every worker."""
    return WORKER_STATS + sampling_keys(suite)


def worker_path(path: Path, index: int) -> Path:
    """``traces.jsonl`` -> ``traces.w1.jsonl`` for worker 1 (its own dump file)."""
    name = path.name
    stem, dot, suffix = name.partition(".")
    return path.with_name(f"{stem}.w{index}{dot}{suffix}")


def _worker_main(
    index: int,
    config: ServeConfig,
    suite: TestSuite,
    conn: Any,
    shared: Any,
    room: Any,
    ready: Any,
    parent: int,
    console_window: Any = None,
    spend_state: SpendState | None = None,
) -> None:
    """A worker process: a ``TracePipeline`` fed from ``conn`` until the end marker, or until
    its router is gone. ``console_window``: the console rate all workers share;
    ``spend_state``: their judge spend window."""
    watch = ParentWatch(parent)
    try:
        watch.install()
        _serve_parts(
            index, config, suite, conn, shared, room, ready, watch, console_window, spend_state
        )
    except ParentGone:
        _log.warning("tooltrail serve: worker %d stopped: its router is gone", index)


def _serve_parts(
    index: int,
    config: ServeConfig,
    suite: TestSuite,
    conn: Any,
    shared: Any,
    room: Any,
    ready: Any,
    watch: ParentWatch,
    console_window: Any = None,
    spend_state: SpendState | None = None,
) -> None:
    from tooltrail.checks.plugins import load_plugins
    from tooltrail.serve.collector import set_for_serving
    from tooltrail.serve.stages import TracePipeline

    load_plugins(config.plugins)  # a spawned process starts with only the built-in checks
    own = replace(
        config,
        workers=1,
        dump=worker_path(config.dump, index) if config.dump is not None else None,
    )
    pipeline = TracePipeline(
        own, suite, admission=False, console_window=console_window, spend_state=spend_state
    )
    set_for_serving()  # the worker's own process (``serve.collector``)
    keys = stat_keys(suite)
    row = (index - 1) * len(keys)
    stop = threading.Event()

    def publish() -> None:
        stats = pipeline.stats()
        stats.update(flat_sampling(stats))
        write_row(shared, row, [int(stats.get(key, 0)) for key in keys])

    def make_room() -> None:
        # The router asks for room while it refuses requests: rootless traces past the grace
        # period are evicted as one worker's admission would (released at once, published).
        keep = room[index - 1]
        if keep != _NO_REQUEST:
            pipeline.intake.evict_rootless(keep)

    def publisher() -> None:
        while not stop.wait(_PUBLISH_EVERY_S):
            make_room()
            publish()

    thread = threading.Thread(target=publisher, name="tooltrail-worker-stats", daemon=True)
    thread.start()
    try:
        try:
            ready.send_bytes(_READY)  # a pipe, not an Event: nothing here waits on the router
            ready.close()
        except OSError:
            raise ParentGone from None
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
        watch.stopping()
        pipeline.shutdown()
        stop.set()
        thread.join()
        publish()
        conn.close()


class _Worker:
    """The router's end of one worker: its process, pipes, send queue and sender thread."""

    def __init__(
        self,
        index: int,
        config: ServeConfig,
        suite: TestSuite,
        shared: Any,
        room: Any,
        console_window: Any = None,
        spend_state: SpendState | None = None,
    ) -> None:
        context = mp.get_context("spawn")
        ours, theirs = context.Pipe(duplex=False)
        self._ready, ready = context.Pipe(duplex=False)
        self.index = index
        self.process = context.Process(
            target=_worker_main,
            args=(
                index,
                config,
                suite,
                ours,
                shared,
                room,
                ready,
                os.getpid(),
                console_window,
                spend_state,
            ),
            name=f"tooltrail-serve-worker-{index}",
            daemon=True,
        )
        try:
            self.process.start()
        finally:
            ours.close()
            ready.close()
        self._conn = theirs
        self._queue: queue.Queue[bytes] = queue.Queue()
        self.sent_spans = 0
        self.broken = False
        self._thread = threading.Thread(target=self._send_all, daemon=True)
        self._thread.start()

    def started(self, timeout: float) -> bool:
        """Whether the worker said it is ready within ``timeout`` seconds; raises
        ``RuntimeError`` if it stopped instead."""
        try:
            if not self._ready.poll(timeout):
                if not self.process.is_alive():
                    raise EOFError
                return False
            self._ready.recv_bytes()
        except (EOFError, OSError):
            raise RuntimeError(
                f"worker {self.index} stopped during start-up (exit code {self.process.exitcode})"
            ) from None
        self._ready.close()
        return True

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

    def end(self) -> None:
        """Queue the end marker behind everything sent so far."""
        self._queue.put(_END)

    def wait(self, deadline: float) -> None:
        """Wait until ``deadline`` (``time.monotonic()``) for the worker to finish, then kill
        it (SIGTERM would be ignored: the router is alive)."""
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self.process.join(max(0.0, deadline - time.monotonic()))
        if self.process.is_alive():
            _log.error("tooltrail serve: worker %d did not stop in time; killed", self.index)
            self.kill()
        self._conn.close()

    def kill(self) -> None:
        """Stop at once (start-up cancelled: the worker holds nothing yet)."""
        self._ready.close()
        self.process.kill()
        self.process.join(10)
        self._conn.close()


class WorkerPool:
    """Same interface as ``TracePipeline`` (``ingest``, ``close``, ``stats``, ``shutdown``),
    backed by ``config.workers`` processes."""

    def __init__(
        self,
        config: ServeConfig,
        suite: TestSuite,
        *,
        stop_requested: threading.Event | None = None,
    ) -> None:
        """Start the workers and wait until each is ready. Raises ``StartCancelled`` once
        ``stop_requested`` is set (SIGTERM during start-up) and ``RuntimeError`` if a worker
        cannot start; either way every worker started is stopped first."""
        self.config = config
        self.counters = ReceiverCounters()
        self._n = config.workers
        self._suite = suite
        #: What each worker's counter row holds, in order (``stat_keys``).
        self._keys = stat_keys(suite)
        context = mp.get_context("spawn")
        #: The workers' counter rows, each written whole under the array's lock.
        self._shared = context.Array("q", self._n * len(self._keys))
        #: The judge's spend window, one account for every worker (``serve.production``);
        #: the router reads it for ``/stats``.
        self._spend_state = SpendState.shared(context) if has_window(config) else None
        self.spend = spend_window(config, self._spend_state)
        #: Per worker: at most how many spans it should hold, evicting rootless traces past
        #: the grace period (``_NO_REQUEST``: no need). Written here, read by the workers.
        self._room = context.Array("q", [_NO_REQUEST] * self._n, lock=False)
        #: The second and the verdict lines written in it, all workers together
        #: (``pipeline.console.SharedRateWindow``).
        self._console_window = context.Array("q", [-1, 0])
        self._asking = False
        self._limits = Limits()
        self._logs_seen = False
        self._closed = False
        self._ended = False
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        stop = stop_requested or threading.Event()
        try:
            for i in range(self._n):
                _check(stop)
                self._workers.append(
                    _Worker(
                        i + 1,
                        config,
                        suite,
                        self._shared,
                        self._room,
                        self._console_window,
                        self._spend_state,
                    )
                )
            deadline = time.monotonic() + _START_S
            for worker in self._workers:
                while not worker.started(_POLL_S):
                    _check(stop)
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"worker {worker.index} did not start in {_START_S:g} s")
        except BaseException:
            for worker in self._workers:
                worker.kill()
            raise
        # Whatever ends this process without ``shutdown`` (an error, ``sys.exit``), the
        # workers are stopped in order first (multiprocessing's own exit hook comes after).
        atexit.register(self.shutdown)

    def _held_spans(self) -> int:
        sent = sum(w.sent_spans for w in self._workers)
        rows: Any = self._shared.get_obj()  # one value each: no lock needed
        width = len(self._keys)
        released = sum(rows[i * width + _RELEASED] for i in range(self._n))
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
            reasons = split.rejected
            # Counted before a worker can judge and release them (as the intake counts).
            self.counters.add(spans_received=split.accepted, spans_rejected=len(reasons))
            for worker, part, spans in zip(self._workers, split.parts, split.spans, strict=True):
                if part is not None:
                    worker.send(part, spans)
            self._room_enough()
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
            # Counted before a worker can judge and release them (as the intake counts).
            self.counters.add(**logs_counts(decoded))
            for worker, part, group in zip(self._workers, parts, groups, strict=True):
                if part is not None:
                    worker.send(part, len(group))
            self._logs_seen = True
            self._room_enough()
        return logs_accepted(decoded)

    def _throttled(self, held: int) -> Throttled:
        self._ask_for_room()
        return Throttled(
            f"buffer full ({held} spans held by {self._n} workers); retry later",
            self.config.retry_after,
        )

    def _ask_for_room(self) -> None:
        """Refusing: every worker evicts its rootless traces past the grace period, as one
        worker's admission would, down to its share of half the limit (so a retry fits)."""
        keep = self.config.max_buffered_spans // (2 * self._n)
        for i in range(self._n):
            self._room[i] = keep
        self._asking = True

    def _room_enough(self) -> None:
        """Taken: once at most half the limit is held, the workers stop evicting."""
        if self._asking and self._held_spans() <= self.config.max_buffered_spans // 2:
            self._asking = False
            for i in range(self._n):
                self._room[i] = _NO_REQUEST

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def healthy(self) -> bool:
        return all(w.process.is_alive() and not w.broken for w in self._workers)

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.counters.snapshot()
        rows = read_rows(self._shared)
        width = len(self._keys)
        flat: dict[str, int] = {}
        for i, key in enumerate(self._keys):
            (stats if i < len(WORKER_STATS) else flat)[key] = sum(
                rows[w * width + i] for w in range(self._n)
            )
        if flat:
            stats["sampling"] = sampling_of(self._suite, flat)
        if self.spend is not None:
            stats.update(self.spend.stats())
        stats["spans_held"] = self._held_spans()
        stats["workers"] = self._n
        # The workers inherit this process's environment: they read as it would.
        stats["reading_path"] = intake_reading_path(self.config.keeps_wire)
        stats["worker_pids"] = [w.process.pid for w in self._workers]
        return stats

    def shutdown(self) -> None:
        """Every worker evaluates what it was sent (incomplete traces partial), then exits;
        one that has not within the time that takes is killed. Safe to call again."""
        self.close()
        with self._lock:
            if self._ended:
                return
            self._ended = True
        atexit.unregister(self.shutdown)
        for worker in self._workers:
            worker.end()
        deadline = time.monotonic() + _START_S + buffer_shutdown_timeout(self.config)
        for worker in self._workers:
            worker.wait(deadline)


def _check(stop: threading.Event) -> None:
    if stop.is_set():
        raise StartCancelled("stopped by a signal during start-up")
