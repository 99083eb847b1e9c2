"""``/stats`` is one consistent view: a trace counted evaluated has its cases counted too.

Before: the receiver counted ``traces_evaluated`` while judging and the cases afterwards (a
result callback), and with ``--workers`` each worker wrote its counter row one value at a
time while the router read them. A reader polling ``/stats`` could see 3 traces evaluated
and 2 cases failed (CI saw it once).
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fixtures import DATA

from tooltrail.otlp import encode_request, read_spans
from tooltrail.pipeline.buffer import LATE, CompletedTrace
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import ReceivedSpan, decode_body
from tooltrail.serve.sinks import received_evaluator
from tooltrail.serve.workers import read_rows, write_row
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {
        "name": "stats",
        "cases": [
            {"id": "one", "match": "all", "max_tool_calls": 0},
            {"id": "two", "match": "all", "max_tool_calls": 100},
        ],
    }
)


@dataclass
class RecordingCounters(ReceiverCounters):
    """Counters that keep a snapshot after every ``add``: what a reader could see."""

    seen: list[dict[str, int]] = field(default_factory=list)

    def add(self, **deltas: int) -> None:
        ReceiverCounters.add(self, **deltas)
        self.seen.append(self.snapshot())


def items_of_a_trace() -> tuple[int, list[Any]]:
    spans = list(read_spans(DATA / "corpus" / "pydantic-ai" / "a_refund_ok.otlp.pb"))
    body = encode_request(spans).SerializeToString()
    decoded = decode_body("protobuf", body)
    trace_id = int(decoded[0].trace_id, 16)
    return trace_id, [ReceivedSpan(s, trace_id) for s in decoded if int(s.trace_id, 16) == trace_id]


def test_a_reader_never_sees_a_trace_evaluated_before_its_cases() -> None:
    counters = RecordingCounters()
    judge = received_evaluator(SUITE, counters)
    trace_id, items = items_of_a_trace()
    judge.export_trace(CompletedTrace(trace_id, items))
    assert counters.seen, "nothing counted"
    for snapshot in counters.seen:
        cases = snapshot["cases_passed"] + snapshot["cases_failed"]
        # Both cases of every trace counted evaluated (the cases may come first).
        assert cases >= 2 * snapshot["traces_evaluated"], snapshot
    final = counters.seen[-1]
    assert final["traces_evaluated"] == 1
    assert (final["cases_passed"], final["cases_failed"]) == (1, 1)


def test_a_workers_row_is_written_whole_under_the_lock() -> None:
    shared = mp.get_context("spawn").Array("q", 6)
    lock = shared.get_lock()
    lock.acquire()  # a reader in the middle of its read
    writer = threading.Thread(target=write_row, args=(shared, 3, [7, 8, 9]))
    try:
        writer.start()
        writer.join(timeout=0.3)
        assert writer.is_alive(), "the row was written while the lock was held"
        assert list(shared.get_obj()) == [0] * 6
    finally:
        lock.release()
    writer.join(timeout=10)
    assert list(shared.get_obj()) == [0, 0, 0, 7, 8, 9]


def test_rows_are_read_even_when_a_dead_writer_holds_the_lock() -> None:
    """A worker killed while writing its row never releases the lock: ``/stats`` still
    answers, after a short wait, rather than hanging."""
    shared = mp.get_context("spawn").Array("q", [1, 2, 3])
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with shared.get_lock():
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        assert read_rows(shared, wait_s=0.2) == [1, 2, 3]
        assert time.monotonic() - started < 10
    finally:
        done.set()
        holder.join(timeout=10)


def held_counters() -> type[ReceiverCounters]:
    """Counters that hold the trace's evaluation at its first count until a reader has taken
    its snapshot, and then that reader until the trace's spans are released: the one
    interleaving in which reading the counters first and the released spans after mixes two
    moments. Fresh events for each test."""
    evaluating, snapshot_taken = threading.Event(), threading.Event()

    class HeldCounters(ReceiverCounters):
        pipeline: Any = None
        started, taken = evaluating, snapshot_taken

        def add(self, **deltas: int) -> None:
            if ("cases_passed" in deltas or "traces_evaluated" in deltas) and (
                not evaluating.is_set()
            ):
                evaluating.set()
                assert snapshot_taken.wait(30), "no reader came"
            ReceiverCounters.add(self, **deltas)

        def snapshot(self) -> dict[str, int]:
            taken = ReceiverCounters.snapshot(self)
            if evaluating.is_set() and not snapshot_taken.is_set():
                snapshot_taken.set()
                deadline = time.monotonic() + 30
                while self.pipeline.intake.released_spans == 0 and time.monotonic() < deadline:
                    time.sleep(0.01)
            return taken

    return HeldCounters


def test_stats_count_every_trace_whose_spans_they_count_released(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """``/stats`` of one process read the counters, then the spans released: a trace
    evaluated and released in between was counted released and not evaluated (the revision
    test saw every span released, ``traces_revised`` one short)."""
    from tooltrail.serve import stages as serve_pipeline
    from tooltrail.serve.config import ServeConfig

    held: Any = held_counters()
    monkeypatch.setattr(serve_pipeline, "ReceiverCounters", held)
    pipeline = serve_pipeline.TracePipeline(
        ServeConfig(suite=tmp_path / "unused.yaml", grace=0.05), SUITE
    )
    held.pipeline = pipeline
    try:
        spans = list(read_spans(DATA / "corpus" / "pydantic-ai" / "a_refund_ok.otlp.pb"))
        pipeline.ingest("protobuf", encode_request(spans).SerializeToString())
        assert held.started.wait(30), "the trace was not evaluated"
        stats = pipeline.stats()  # while the trace is being evaluated
    finally:
        held.taken.set()
        pipeline.shutdown()
    done = stats["spans_released"] >= stats["spans_received"] > 0
    counted = (stats["traces_evaluated"], stats["cases_passed"] + stats["cases_failed"])
    assert counted == ((1, 2) if done else (0, 0)), stats


def test_a_trace_counted_evaluated_has_its_results_line_written(tmp_path: Any) -> None:
    """Before: the receiver counted a trace evaluated, then wrote its results line. A reader
    who polled ``/stats`` until the trace was evaluated (or revised) and then read the results
    file (``--workers``: a worker publishes its counters every 0.1 s) could miss the line.
    The file holds lines for a burst of traces; a reader reads as ``TracePipeline.stats``
    does: the counters, then the held lines written, then the file."""
    from tooltrail.serve.sinks import ResultsFile

    path = tmp_path / "results.jsonl"
    lines_when: list[tuple[dict[str, int], int]] = []

    class LineCheckingCounters(ReceiverCounters):
        def add(self, **deltas: int) -> None:
            ReceiverCounters.add(self, **deltas)
            snapshot = self.snapshot()
            judge.flush_lines()
            lines_when.append((snapshot, len(path.read_bytes().splitlines())))

    counters = LineCheckingCounters()
    judge = received_evaluator(SUITE, counters, results=ResultsFile(path))
    trace_id, items = items_of_a_trace()
    try:
        judge.export_trace(CompletedTrace(trace_id, items[:-1]))
        judge.export_trace(CompletedTrace(trace_id, items[-1:], reason=LATE))  # a revision
    finally:
        judge.shutdown()
    assert lines_when, "nothing counted"
    for snapshot, lines in lines_when:
        assert lines >= snapshot["traces_evaluated"] + snapshot["traces_revised"], (
            snapshot,
            lines,
        )
        assert lines >= 1 or snapshot["cases_passed"] + snapshot["cases_failed"] == 0, snapshot
    final, lines = lines_when[-1]
    assert (final["traces_evaluated"], final["traces_revised"], lines) == (1, 1, 2)


def test_spans_are_counted_received_before_they_can_be_released(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """Before: the intake handed a request's spans to the buffer, then counted them received.
    A request thread held up in between (a loaded machine) let a reader see the trace judged
    and its spans released, ``spans_released`` past ``spans_received``. Here the thread is
    held there until the spans are released (at most 2 s: after the fix nothing is released
    until they are counted)."""
    from tooltrail.serve import stages as serve_pipeline
    from tooltrail.serve.config import ServeConfig

    seen: list[tuple[int, int]] = []  # (released, received) when spans are counted received
    holder: list[Any] = []

    class HeldCounters(ReceiverCounters):
        def add(self, **deltas: int) -> None:
            if "spans_received" in deltas:
                intake = holder[0].intake
                deadline = time.monotonic() + 2
                while intake.released_spans == 0 and time.monotonic() < deadline:
                    time.sleep(0.01)
                seen.append((intake.released_spans, self.spans_received))
            ReceiverCounters.add(self, **deltas)

    monkeypatch.setattr(serve_pipeline, "ReceiverCounters", HeldCounters)
    pipeline = serve_pipeline.TracePipeline(
        ServeConfig(suite=tmp_path / "unused.yaml", grace=0.0), SUITE
    )
    holder.append(pipeline)
    try:
        spans = list(read_spans(DATA / "corpus" / "pydantic-ai" / "a_refund_ok.otlp.pb"))
        pipeline.ingest("protobuf", encode_request(spans).SerializeToString())
    finally:
        pipeline.shutdown()
    assert seen == [(0, 0)]  # nothing released before the request's spans were counted
    stats = pipeline.stats()
    assert stats["spans_released"] == stats["spans_received"] == len(spans)


def test_with_workers_spans_are_counted_received_before_they_are_sent(monkeypatch: Any) -> None:
    """The router of ``--workers`` did the same: it passed a request's spans to the workers,
    then counted them received. Its thread held in between (at most 5 s here) let a worker
    judge, release and publish them first."""
    from tooltrail.serve import workers as serve_workers
    from tooltrail.serve.config import ServeConfig

    seen: list[tuple[int, int]] = []  # (released, received) when spans are counted received
    holder: list[Any] = []

    class HeldCounters(ReceiverCounters):
        def add(self, **deltas: int) -> None:
            if "spans_received" in deltas:
                deadline = time.monotonic() + 5
                while released() == 0 and time.monotonic() < deadline:
                    time.sleep(0.02)
                seen.append((released(), self.spans_received))
            ReceiverCounters.add(self, **deltas)

    def released() -> int:
        return int(holder[0].stats()["spans_released"])

    monkeypatch.setattr(serve_workers, "ReceiverCounters", HeldCounters)
    pool = serve_workers.WorkerPool(ServeConfig(grace=0.0, workers=2), SUITE)
    holder.append(pool)
    try:
        spans = list(read_spans(DATA / "corpus" / "pydantic-ai" / "a_refund_ok.otlp.pb"))
        pool.ingest("protobuf", encode_request(spans).SerializeToString())
    finally:
        pool.shutdown()
    assert seen == [(0, 0)]  # nothing released before the request's spans were counted
    stats = pool.stats()
    assert stats["spans_released"] == stats["spans_received"] > 0


def test_log_records_are_counted_received_before_they_can_be_released(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """The same for a logs request: its records were counted received after the buffer had
    them. Here they come after their trace's verdict (a late piece, judged again at once) and
    the request thread is held there until they are released (at most 2 s)."""
    import json

    from tooltrail.serve import stages as serve_pipeline
    from tooltrail.serve.config import ServeConfig

    seen: list[tuple[int, int]] = []  # (released, received) when records are counted
    holder: list[Any] = []

    class HeldCounters(ReceiverCounters):
        def add(self, **deltas: int) -> None:
            if deltas.get("log_records_received"):
                intake = holder[0].intake
                before = intake.released_spans
                deadline = time.monotonic() + 2
                while intake.released_spans == before and time.monotonic() < deadline:
                    time.sleep(0.01)
                seen.append(
                    (intake.released_spans, self.spans_received + self.log_records_received)
                )
            ReceiverCounters.add(self, **deltas)

    monkeypatch.setattr(serve_pipeline, "ReceiverCounters", HeldCounters)
    pipeline = serve_pipeline.TracePipeline(
        ServeConfig(suite=tmp_path / "unused.yaml", grace=0.0, logs_grace=0.0), SUITE
    )
    holder.append(pipeline)
    doc = json.loads((DATA / "logs" / "openai_v2_weather.json").read_text())
    try:
        pipeline.ingest("json", json.dumps({"resourceSpans": doc["resourceSpans"]}).encode())
        deadline = time.monotonic() + 60
        while pipeline.intake.released_spans == 0:  # the trace judged: the records come late
            assert time.monotonic() < deadline
            time.sleep(0.01)
        pipeline.ingest_logs("json", json.dumps({"resourceLogs": doc["resourceLogs"]}).encode())
    finally:
        pipeline.shutdown()
    [(released, received)] = seen
    assert released <= received  # nothing released before it was counted received
    stats = pipeline.stats()
    assert stats["log_records_received"] > 0 and stats["log_records_late"] > 0
    assert stats["spans_released"] == stats["spans_received"] + stats["log_records_received"]


def test_with_workers_log_records_are_counted_received_before_they_are_sent(
    monkeypatch: Any,
) -> None:
    """The router's logs requests likewise (its thread held at most 5 s)."""
    import json

    from tooltrail.serve import workers as serve_workers
    from tooltrail.serve.config import ServeConfig

    seen: list[tuple[int, int]] = []  # (released, received) when records are counted
    holder: list[Any] = []

    def released() -> int:
        return int(holder[0].stats()["spans_released"])

    class HeldCounters(ReceiverCounters):
        def add(self, **deltas: int) -> None:
            if deltas.get("log_records_received"):
                before = released()
                deadline = time.monotonic() + 5
                while released() == before and time.monotonic() < deadline:
                    time.sleep(0.02)
                seen.append((released(), self.spans_received + self.log_records_received))
            ReceiverCounters.add(self, **deltas)

    monkeypatch.setattr(serve_workers, "ReceiverCounters", HeldCounters)
    pool = serve_workers.WorkerPool(ServeConfig(grace=0.0, logs_grace=0.0, workers=2), SUITE)
    holder.append(pool)
    doc = json.loads((DATA / "logs" / "openai_v2_weather.json").read_text())
    try:
        pool.ingest("json", json.dumps({"resourceSpans": doc["resourceSpans"]}).encode())
        deadline = time.monotonic() + 60
        while released() == 0:  # the trace judged: the records come late
            assert time.monotonic() < deadline
            time.sleep(0.02)
        pool.ingest_logs("json", json.dumps({"resourceLogs": doc["resourceLogs"]}).encode())
    finally:
        pool.shutdown()
    [(released_then, received)] = seen
    assert released_then <= received  # nothing released before it was counted received
    stats = pool.stats()
    assert stats["log_records_received"] > 0
    assert stats["spans_released"] == stats["spans_received"] + stats["log_records_received"]


class FullDisk:
    """A results file whose every write fails, as on a full disk."""

    def append(self, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_results_line_that_cannot_be_written_is_a_sink_error_not_an_evaluation_error() -> None:
    """The line is written inside judging (before the counts): a write that fails must not
    count the judged trace as an evaluation error, nor lose its counts."""
    counters = ReceiverCounters()
    judge = received_evaluator(SUITE, counters, results=FullDisk())  # type: ignore[arg-type]
    trace_id, items = items_of_a_trace()
    judge.export_trace(CompletedTrace(trace_id, items))
    seen = counters.snapshot()
    assert seen["evaluation_errors"] == 0
    assert judge.errors == 1  # /stats sink_errors
    assert seen["traces_evaluated"] == 1
    assert (seen["cases_passed"], seen["cases_failed"]) == (1, 1)
