"""``tooltrail serve`` when the buffer is full: given-up traces and rootless floods.

A real receiver on loopback, fed OTLP/HTTP protobuf requests; the results file and ``/stats``
are read back. Issue 14: a trace the buffer gives up must release its place in the intake (or
the receiver refuses everyone for ever), and traces whose root never comes must not lock out
complete ones until ``--max-age``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from serve_helpers import ANY_TRACE_SUITE, post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of, rootless_trace

from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread

#: Four tool calls under an agent span: five spans a trace.
FOUR_CALLS = [
    {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.arguments": f'{{"order_id": "ORD-{i}"}}',
    }
    for i in range(4)
]


def stats_of(receiver: RunningReceiver) -> dict[str, Any]:
    assert receiver.http_port is not None
    status, _, body = post(receiver.http_port, b"", path="/stats", method="GET")
    assert status == 200
    return dict(orjson.loads(body))


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def results_of(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def send(receiver: RunningReceiver, spans: list[Any]) -> int:
    assert receiver.http_port is not None
    return post(receiver.http_port, body_of(spans), PROTOBUF)[0]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., RunningReceiver]]:
    started: list[RunningReceiver] = []

    def start(**options: Any) -> RunningReceiver:
        config = ServeConfig(
            suite=write_suite(tmp_path, ANY_TRACE_SUITE),
            grpc_port=None,
            http_port=0,
            results=tmp_path / "results.jsonl",
            **options,
        )
        receiver = start_in_thread(config)
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.stop()


def test_a_trace_the_buffer_gives_up_is_released_counted_and_named(
    start: Callable[..., RunningReceiver], tmp_path: Path
) -> None:
    # The buffer holds twice the admission limit (20 spans); one request (always taken when
    # nothing is held) brings 30, all within their grace: the buffer gives two traces up.
    receiver = start(max_buffered_spans=10, grace=1.0)
    traces = [agent_trace(tool_attributes=FOUR_CALLS) for _ in range(6)]
    assert send(receiver, [span for spans in traces for span in spans]) == 200
    wait_until(lambda: stats_of(receiver)["traces_evaluated"] == 4)
    wait_until(lambda: stats_of(receiver)["spans_held"] == 0)
    stats = stats_of(receiver)
    assert stats["traces_dropped"] == 2
    assert stats["traces_held"] == 0

    lines = results_of(tmp_path / "results.jsonl")
    dropped = [line for line in lines if line["reason"] == "dropped"]
    assert len(dropped) == 2
    assert all(d["partial"] and d["verdict"] == "partial" for d in dropped)
    assert all(d["spans_dropped"] == 5 for d in dropped)
    named = sorted(line["trace_id"] for line in lines)
    assert named == sorted(spans[0].trace_id for spans in traces)  # each trace exactly once

    # The receiver takes requests again (before, its held count only grew: 503 for all).
    again = agent_trace(tool_attributes=FOUR_CALLS)
    assert send(receiver, again) == 200
    wait_until(lambda: stats_of(receiver)["traces_evaluated"] == 5)


def test_a_rootless_flood_does_not_lock_out_complete_traces(
    start: Callable[..., RunningReceiver], tmp_path: Path
) -> None:
    receiver = start(max_buffered_spans=50, grace=0.2, max_age=300)
    complete_ids: list[str] = []
    rootless_taken: list[str] = []
    for _ in range(8):
        # A burst of rootless traces fills the buffer (some are refused: the held ones are
        # too young to evict) ...
        for _ in range(8):
            spans = rootless_trace(spans=5) + rootless_trace(spans=5)
            if send(receiver, spans) == 200:
                rootless_taken.extend({s.trace_id for s in spans})
        time.sleep(0.4)  # ... and ages past the grace period
        complete = agent_trace(tool_attributes=FOUR_CALLS)
        assert send(receiver, complete) == 200
        complete_ids.append(complete[0].trace_id)

    def evaluated() -> set[str]:
        return {
            line["trace_id"]
            for line in results_of(tmp_path / "results.jsonl")
            if line["reason"] == "complete"
        }

    wait_until(lambda: set(complete_ids) <= evaluated())
    stats = stats_of(receiver)
    assert stats["traces_evicted_rootless"] > 0
    assert stats["spans_held"] <= 50

    final = receiver.stop()
    lines = results_of(tmp_path / "results.jsonl")
    by_id: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_id.setdefault(line["trace_id"], []).append(line)
    assert all(len(by_id[t]) == 1 and by_id[t][0]["verdict"] == "pass" for t in complete_ids)
    # Every rootless trace taken is evaluated exactly once: evicted, or partial at shutdown.
    assert all(len(by_id[t]) == 1 for t in rootless_taken)
    reasons = [by_id[t][0]["reason"] for t in rootless_taken]
    assert set(reasons) <= {"evicted", "shutdown"}
    assert reasons.count("evicted") == final["traces_evicted_rootless"]
    assert all(by_id[t][0]["partial"] for t in rootless_taken)


def test_traces_given_up_while_the_evaluator_is_stuck_are_counted(
    start: Callable[..., RunningReceiver],
) -> None:
    """Issue 22: with the evaluator stuck (the buffer's notices then skip it), ``/stats`` said
    ``traces_dropped: 0`` while the log said traces were given up. The count now comes from the
    buffer, where traces are given up."""
    receiver = start(max_buffered_spans=10, grace=1.0)
    pipeline = receiver.receiver.pipeline
    release = threading.Event()
    entered = threading.Event()

    def stuck(trace: Any) -> None:  # an evaluator that does not return (until the test ends)
        entered.set()
        release.wait(60)

    pipeline.evaluator.export_trace = stuck  # type: ignore[method-assign]
    pipeline.buffer.sink_timeout_s = 0.2
    try:
        assert send(receiver, agent_trace(tool_attributes=FOUR_CALLS)) == 200
        assert entered.wait(30)
        wait_until(lambda: pipeline.buffer.stats().sinks_stuck == 1)
        # One request of 30 spans, all within their grace, over the buffer's bound (twice the
        # admission limit, 20): the buffer gives two traces up, and their notices skip the
        # stuck evaluator.
        traces = [agent_trace(tool_attributes=FOUR_CALLS) for _ in range(6)]
        wait_until(lambda: stats_of(receiver)["spans_held"] == 0)
        assert send(receiver, [span for spans in traces for span in spans]) == 200
        wait_until(lambda: stats_of(receiver)["spans_held"] == 0)
        assert pipeline.buffer.stats().traces_dropped == 2
        assert stats_of(receiver)["traces_dropped"] == 2
    finally:
        release.set()
