"""Edges of reading dumps: files of empty records or blank lines cost time per block, not per
record; decompression stops at a per-input budget; JSON that is not OTLP/JSON is named for
what it looks like. Big inputs are generated in ``tmp_path`` (the zeros as sparse files)."""

from __future__ import annotations

import gzip
import random
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from test_batch_support import SEED_RUNS, jsonl, record, write

from tooltrail.batch.chunks import plan_chunks
from tooltrail.batch.tasks import read_chunk
from tooltrail.otlp import Diagnostic, Limits, frame, iter_records, read_spans

#: Generous: the bulk paths take about a second; the per-record ones took half a minute.
BOUND_S = 20.0
MiB = 1 << 20


def _read_batch(path: Path, chunk_bytes: int | None = None, parallelism: int = 1, **kw):
    """(chunks, records as (extent, span count), diagnostics) of a batch read of ``path``."""
    limits = kw.get("limits")
    chunks = plan_chunks([str(path)], chunk_bytes=chunk_bytes, parallelism=parallelism)
    diagnostics: list[Diagnostic] = []
    records = [
        (extent, len(spans))
        for chunk in chunks
        for extent, spans in read_chunk(chunk, limits, diagnostics)
    ]
    return chunks, records, diagnostics


# --- item 6: files of empty or tiny length-prefixed records ------------------------------------


def test_a_file_of_empty_protobuf_messages_is_planned_and_read_in_bulk(tmp_path: Path) -> None:
    path = tmp_path / "zeros.pb"
    with path.open("wb") as out:
        out.truncate(100 * MiB)  # sparse: 25 million empty length-prefixed messages
    started = time.perf_counter()
    chunks, records, diagnostics = _read_batch(path, parallelism=2)
    elapsed = time.perf_counter() - started
    assert [(c.framing, c.start, c.end) for c in chunks] == [
        ("prefixed", i * 3_276_800 * 4, (i + 1) * 3_276_800 * 4) for i in range(8)
    ]
    assert (records, diagnostics) == ([], [])
    assert elapsed < BOUND_S, f"{elapsed:.1f}s for 100 MB of empty messages"


def _reference_prefix_cuts(data: bytes, chunk_bytes: int) -> list[tuple[int, int]] | None:
    """The planner's rule, one prefix at a time: a cut after the record that completes
    ``chunk_bytes``; nothing when the prefixes do not tile the data or give one chunk."""
    cuts: list[tuple[int, int]] = []
    start = offset = 0
    while offset < len(data):
        if offset + 4 > len(data):
            return None
        n = int.from_bytes(data[offset : offset + 4], "big")
        if offset + 4 + n > len(data):
            return None
        offset += 4 + n
        if offset - start >= chunk_bytes:
            cuts.append((start, offset))
            start = offset
    if start < len(data):
        cuts.append((start, len(data)))
    return cuts if len(cuts) > 1 else None


def _framed_mixes(rng: random.Random) -> Iterator[bytes]:
    """Length-prefixed files mixing runs of empty messages, tiny and large records (one
    larger than the planner's block), and some that do not tile (cut short, trailing bytes)."""
    for _ in range(40):
        parts = []
        for _ in range(rng.randrange(1, 60)):
            kind = rng.random()
            if kind < 0.3:
                parts.append(bytes(4 * rng.randrange(1, 5000)))
            elif kind < 0.8:
                parts.append(frame(rng.randbytes(rng.randrange(1, 40))))
            elif kind < 0.97:
                parts.append(frame(rng.randbytes(rng.randrange(1_000, 40_000))))
            else:
                parts.append(frame(bytes(rng.randrange(1 << 20, 3 << 20))))
        data = b"".join(parts)
        ending = rng.random()
        if ending < 0.1:
            data = data[: -rng.randrange(1, 4)]
        elif ending < 0.2:
            data += bytes(rng.randrange(1, 4))
        yield data


def test_protobuf_chunks_are_cut_where_a_prefix_by_prefix_walk_cuts_them(tmp_path: Path) -> None:
    rng = random.Random(15)
    path = tmp_path / "mix.pb"
    for data in _framed_mixes(rng):
        path.write_bytes(data)
        for chunk_bytes in (1, 7, 4_096, 10_001, 65_536, len(data) // 3 + 1):
            if len(data) <= chunk_bytes:
                continue
            expected = _reference_prefix_cuts(data, chunk_bytes)
            chunks = plan_chunks([str(path)], chunk_bytes=chunk_bytes)
            if expected is None:
                assert [(c.framing, c.start, c.end) for c in chunks] == [("whole", 0, None)]
            else:
                assert [(c.start, c.end) for c in chunks] == expected
                assert {c.framing for c in chunks} == {"prefixed"}


# --- item 7: blank lines in bulk, a decompression budget per input ------------------------------


def _runs_lines() -> list[bytes]:
    return jsonl(record(SEED_RUNS)).splitlines(keepends=True)


def test_a_gzip_stream_of_blank_lines_is_skipped_in_bulk_with_lines_kept(tmp_path: Path) -> None:
    first, *rest = _runs_lines()
    blank = 256 * MiB
    path = tmp_path / "blank.jsonl.gz"
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        out.write(packer.compress(first))
        newlines = b"\n" * MiB
        for _ in range(blank // MiB):
            out.write(packer.compress(newlines))
        out.write(packer.compress(b"{truncated\n" + rest[0]))
        out.write(packer.flush())
    # this test is about time, not the ratio nor the blank bound (tests/otlp/test_blank_streams.py)
    limits = Limits(max_compression_ratio=10**6, max_blank_bytes=blank + MiB)
    diagnostics: list[Diagnostic] = []
    started = time.perf_counter()
    records = list(iter_records(path, limits=limits, diagnostics=diagnostics))
    elapsed = time.perf_counter() - started
    assert [r.line for r in records] == [1, blank + 3]
    assert [(d.line, d.message.split(" (")[0]) for d in diagnostics] == [
        (blank + 2, "invalid JSON")
    ]
    assert elapsed < BOUND_S, f"{elapsed:.1f}s for 256 MiB of blank lines"


def test_batch_chunks_of_blank_lines_are_skipped_in_bulk_with_lines_kept(tmp_path: Path) -> None:
    lines = _runs_lines()
    blank = 256 * MiB
    path = tmp_path / "blank.jsonl"
    with path.open("wb") as out:
        out.write(lines[0])
        mixed = b"\n \t\r\x0b\x0c" * 1000  # every byte ``bytes.isspace`` counts
        out.write(mixed + b"\n" * (blank - len(mixed)))
        out.write(b"{truncated\n" + b"".join(lines[1:]))
    blank_lines = 1000 + blank - len(mixed)
    started = time.perf_counter()
    chunks, records, diagnostics = _read_batch(path, chunk_bytes=40 * MiB)
    elapsed = time.perf_counter() - started
    assert len(chunks) > 5 and {c.framing for c in chunks} == {"lines"}
    assert [e.line for e, _n in records] == [1] + [
        blank_lines + 2 + i for i in range(1, len(lines))
    ]
    assert [(d.line, d.message.split(" (")[0]) for d in diagnostics] == [
        (blank_lines + 2, "invalid JSON")
    ]
    assert elapsed < BOUND_S, f"{elapsed:.1f}s for 256 MiB of blank lines"


def test_a_compressed_stream_stops_at_the_decompression_budget_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl.gz"
    path.write_bytes(gzip.compress(_runs_lines()[0] + b"\n" * (20 * MiB), compresslevel=9))
    limits = Limits(max_record_bytes=MiB, max_decompressed_bytes=8 * MiB)
    diagnostics: list[Diagnostic] = []
    assert len(list(iter_records(path, limits=limits, diagnostics=diagnostics))) == 1
    (problem,) = diagnostics
    assert problem.path == str(path)
    assert "max_decompressed_bytes budget of 8 MiB" in problem.message
    assert problem.message.endswith("rest of file skipped")


def _compressed_records(count: int) -> bytes:
    """Length-prefixed gzip messages, each a JSON request padded to 1 MiB with spaces."""
    body = b'{"resourceSpans": []}' + b" " * (MiB - 21)
    return b"".join(frame(gzip.compress(body, compresslevel=9)) for _ in range(count))


def test_compressed_records_share_their_files_decompression_budget(tmp_path: Path) -> None:
    path = tmp_path / "records.pb"
    path.write_bytes(_compressed_records(50))  # 50 MiB out of about 50 KB in
    limits = Limits(max_record_bytes=2 * MiB, max_decompressed_bytes=8 * MiB)
    diagnostics: list[Diagnostic] = []
    records = list(iter_records(path, limits=limits, diagnostics=diagnostics))
    assert len(records) == 8
    (problem,) = diagnostics
    assert problem.path == str(path) and problem.offset > records[-1].offset
    assert "max_decompressed_bytes budget of 8 MiB" in problem.message


def test_a_batch_chunk_of_compressed_records_stops_at_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "records.pb"
    path.write_bytes(_compressed_records(50))
    limits = Limits(max_record_bytes=2 * MiB, max_decompressed_bytes=8 * MiB)
    (chunk,) = plan_chunks([str(path)], chunk_bytes=len(path.read_bytes()) // 2 + 1)[:1]
    diagnostics: list[Diagnostic] = []
    assert len(list(read_chunk(chunk, limits, diagnostics))) == 8
    (problem,) = diagnostics
    assert problem.path == str(path)
    assert "max_decompressed_bytes budget of 8 MiB" in problem.message


def test_the_default_decompression_budget_is_4_gib() -> None:
    assert Limits().max_decompressed_bytes == 4 << 30


# --- item 8: JSON that is not OTLP/JSON says what it looks like ---------------------------------

ARRAY = "a JSON array, not an OTLP/JSON object"
TRUNCATED = "truncated JSON (the line ends inside a string/object)"


def test_a_json_array_file_is_named_as_such_not_as_protobuf(tmp_path: Path) -> None:
    path = write(tmp_path / "spans.json", b'[\n  {"resourceSpans": []}\n]\n')
    diagnostics: list[Diagnostic] = []
    assert list(read_spans(path, diagnostics=diagnostics)) == []
    (problem,) = diagnostics
    assert (problem.path, problem.line) == (path, 1)
    assert ARRAY in problem.message and '{"resourceSpans": ...}' in problem.message
    assert "protobuf" not in problem.message and "length-prefixed" not in problem.message


def test_a_json_array_found_in_a_directory_is_skipped_like_other_non_otlp_json(
    tmp_path: Path,
) -> None:
    write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS)))
    write(tmp_path / "cases.json", b'[{"id": "a"}, {"id": "b"}]')
    diagnostics: list[Diagnostic] = []
    assert len(list(read_spans(str(tmp_path), diagnostics=diagnostics))) > 0
    assert diagnostics == []


def test_a_json_array_line_among_json_lines_is_named_as_such(tmp_path: Path) -> None:
    first, *_ = _runs_lines()
    path = write(tmp_path / "runs.jsonl", first + b"[1, 2]\n")
    diagnostics: list[Diagnostic] = []
    assert len(list(iter_records(path, diagnostics=diagnostics))) == 1
    (problem,) = diagnostics
    assert problem.line == 2 and ARRAY in problem.message


def test_a_truncated_json_line_is_named_truncated_at_its_line(tmp_path: Path) -> None:
    lines = _runs_lines()
    cut = lines[1][: len(lines[1]) // 2] + b"\n"  # a writer killed mid-line
    path = tmp_path / "runs.jsonl"
    path.write_bytes(lines[0] + cut + b'{"resourceSpans" []}\n' + b"".join(lines[2:]))
    diagnostics: list[Diagnostic] = []
    assert len(list(iter_records(path, diagnostics=diagnostics))) == len(lines) - 1
    assert [(d.line, d.message) for d in diagnostics][0] == (2, TRUNCATED)
    assert diagnostics[1].line == 3 and "truncated" not in diagnostics[1].message
    # the same file cut into chunks for the batch pass
    _chunks, _records, found = _read_batch(path, chunk_bytes=len(lines[0]) + 1)
    assert [(d.path, d.line, d.message) for d in found][0] == (str(path), 2, TRUNCATED)
    assert found[1].line == 3 and "truncated" not in found[1].message


def test_a_json_line_cut_at_the_end_of_the_file_is_named_truncated(tmp_path: Path) -> None:
    lines = _runs_lines()
    path = write(tmp_path / "runs.jsonl", lines[0] + lines[1][:-40])
    diagnostics: list[Diagnostic] = []
    assert len(list(iter_records(path, diagnostics=diagnostics))) == 1
    assert [(d.line, d.message) for d in diagnostics] == [(2, TRUNCATED)]
