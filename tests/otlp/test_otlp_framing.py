"""One framing loop: the batch pass reads a byte range of a length-prefixed file through the
file reader's own loop, so a range says what a whole-file read says about the same records."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from tooltrail.batch.chunks import Chunk
from tooltrail.batch.tasks import read_chunk
from tooltrail.otlp import Diagnostic, Limits, read_spans

LIMITS = Limits(max_record_bytes=4096)


def _request(n: int) -> bytes:
    data = TracesData()
    spans = data.resource_spans.add().scope_spans.add().spans
    spans.add(trace_id=bytes([n]) * 16, span_id=bytes([n]) * 8, name=f"root {n}")
    return data.SerializeToString()


def _framed(body: bytes, declared: int | None = None) -> bytes:
    return (len(body) if declared is None else declared).to_bytes(4, "big") + body


def _dump(tmp_path: Path) -> tuple[Path, int]:
    """A dump with every kind of framing trouble after a good first record, and the offset
    of a record boundary in its middle."""
    first = _framed(_request(1)) + bytes(8)  # two empty messages
    first += _framed(b"x" * 5000)  # over the record limit
    first += _framed(b"\xff\xff\xff")  # not a message
    second = _framed(_request(2)) + _framed(_request(3), declared=900)  # truncated record
    path = tmp_path / "dump.pb"
    path.write_bytes(first + second)
    return path, len(first)


def test_a_range_reports_framing_trouble_as_the_whole_file_read_does(tmp_path: Path) -> None:
    path, middle = _dump(tmp_path)
    whole: list[Diagnostic] = []
    spans = list(read_spans([str(path)], limits=LIMITS, diagnostics=whole))
    ranged: list[Diagnostic] = []
    parts = [(0, middle), (middle, None)]
    records = [
        (extent, found)
        for index, (start, end) in enumerate(parts)
        for extent, found in read_chunk(
            Chunk(index, str(path), "prefixed", start, end), LIMITS, ranged
        )
    ]
    assert [s.name for s in spans] == ["root 1", "root 2"]
    assert [found[0].name for _, found in records] == ["root 1", "root 2"]
    assert [str(d) for d in ranged] == [str(d) for d in whole]
    assert [(d.path, d.offset) for d in ranged] == [(str(path), d.offset) for d in whole]
    assert len(whole) == 3


def test_a_range_ending_in_a_cut_prefix_names_how_much_of_it_is_there(tmp_path: Path) -> None:
    path = tmp_path / "cut.pb"
    path.write_bytes(_framed(_request(1)) + b"\0\0")
    ranged: list[Diagnostic] = []
    chunk = Chunk(0, str(path), "prefixed", 0, path.stat().st_size)
    assert len(list(read_chunk(chunk, LIMITS, ranged))) == 1
    offset = len(_framed(_request(1)))
    assert [str(d) for d in ranged] == [f"{path}@{offset}: truncated length prefix (2 of 4 bytes)"]
