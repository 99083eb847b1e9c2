"""serve's results file holds the lines of a burst of traces and writes them in one ``write``:
whole lines, none lost, each on file once the buffer has nothing more ready, and every trace
``/stats`` counts evaluated found in the file by whoever read ``/stats`` first."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from fixtures import DATA

from tooltrail.otlp import encode_request, read_spans
from tooltrail.serve import stages
from tooltrail.serve.config import ServeConfig
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.sinks import HELD_BYTES, HELD_LINES, ResultsFile
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {"name": "batch", "cases": [{"id": "one", "match": "all", "max_tool_calls": 100}]}
)
RECORDING = DATA / "corpus" / "pydantic-ai" / "a_refund_ok.otlp.pb"


def lines_in(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []


def test_held_lines_are_written_whole_when_the_bound_is_reached_or_flushed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.jsonl"
    results = ResultsFile(path)
    results.append(b'{"n": 0}\n')
    results.append(b'{"n": 1}\n')
    assert lines_in(path) == []  # held
    results.flush()
    assert lines_in(path) == [b'{"n": 0}', b'{"n": 1}']
    for n in range(2, 2 + HELD_LINES):  # the bound: written without a flush
        results.append(b'{"n": %d}\n' % n)
    assert len(lines_in(path)) == 2 + HELD_LINES
    results.append(b'{"n": "big", "pad": "' + b"x" * HELD_BYTES + b'"}\n')
    assert len(lines_in(path)) == 3 + HELD_LINES  # one line past the bytes bound: at once
    results.append(b'{"n": "last"}\n')
    results.close()
    found = [orjson.loads(line)["n"] for line in lines_in(path)]
    assert found == [*range(2 + HELD_LINES), "big", "last"]
    results.append(b'{"n": "after close"}\n')  # nothing more is written, nothing raises
    assert len(lines_in(path)) == 4 + HELD_LINES
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_lone_traces_line_is_written_once_the_buffer_has_nothing_more(
    tmp_path: Path,
) -> None:
    """One trace and then nothing: its line is on file without a ``/stats`` read, a flush or
    a shutdown (the buffer's ``idle``)."""
    path = tmp_path / "results.jsonl"
    pipeline = stages.TracePipeline(
        ServeConfig(suite=tmp_path / "unused.yaml", grace=0.05, results=path), SUITE
    )
    try:
        spans = list(read_spans(RECORDING))
        pipeline.ingest("protobuf", encode_request(spans).SerializeToString())
        deadline = time.monotonic() + 60
        while not lines_in(path):
            assert time.monotonic() < deadline, "the line was not written"
            time.sleep(0.01)
        assert orjson.loads(lines_in(path)[0])["verdict"] in ("pass", "fail")
    finally:
        pipeline.shutdown()
    assert len(lines_in(path)) == 1


def test_every_trace_stats_counts_evaluated_has_its_line_on_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader of ``/stats`` at each moment the receiver counts (while the trace's line is
    still held) finds a line for every trace the answer counts evaluated."""
    path = tmp_path / "results.jsonl"
    seen: list[tuple[int, int]] = []
    reader: dict[str, Any] = {}

    class ReadAtEachCount(ReceiverCounters):
        def add(self, **deltas: int) -> None:
            ReceiverCounters.add(self, **deltas)
            if "pipeline" in reader:
                stats = reader["pipeline"].stats()
                seen.append((stats["traces_evaluated"], len(lines_in(path))))

    monkeypatch.setattr(stages, "ReceiverCounters", ReadAtEachCount)
    pipeline = stages.TracePipeline(
        ServeConfig(suite=tmp_path / "unused.yaml", grace=0.05, results=path), SUITE
    )
    reader["pipeline"] = pipeline
    try:
        spans = list(read_spans(RECORDING))
        pipeline.ingest("protobuf", encode_request(spans).SerializeToString())
        deadline = time.monotonic() + 60
        while not any(evaluated for evaluated, _ in seen):
            assert time.monotonic() < deadline, "the trace was not evaluated"
            time.sleep(0.01)
    finally:
        pipeline.shutdown()
    assert all(lines >= evaluated for evaluated, lines in seen), seen
