"""Compressed streams of nothing (issue 22, item 5): newlines, spaces or empty messages at a
ratio under ``max_compression_ratio`` are refused after ``max_blank_bytes`` of them, with one
diagnostic, by every reader: ``read_spans``, ``read_traces``, ``tooltrail convert`` and
``tooltrail eval`` with one and two workers. Plain files are not bounded (nothing after a
blank run in them is lost) and cost no more than reading their bytes.

The files are real gzip and zstd streams made in ``tmp_path``; their ratio is checked to be
under the cap first, so it is the blank bound that stops them, not the ratio. No assertion
is on time: where reading stopped is the diagnostic's offset, in decompressed bytes."""

from __future__ import annotations

import random
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest
import zstandard
from fixtures import recorded_refund_case, suite_yaml
from test_batch_support import SEED_RUNS, jsonl, record

from tooltrail.convert import read_traces
from tooltrail.otlp import Diagnostic, Limits, frame, iter_records, read_spans

MiB = 1 << 20
#: ``Limits.max_blank_bytes`` by default.
BOUND = 64 * MiB
#: Where a stream of nothing stops: one byte past the bound, in decompressed bytes.
STOP = BOUND + 1
TOOLTRAIL = str(Path(sys.executable).with_name("tooltrail"))
#: Generous: each run takes about a second; without the bound, most never printed the line.
TIMEOUT_S = 300


def _noise(size: int, every: int, blank: bytes = b"\n", seed: int = 1) -> bytes:
    """``size`` bytes of ``blank`` with a space or tab about every ``every`` bytes: noise that
    holds the compression ratio under the cap, as the issue's files had (532 and about 950)."""
    rnd = random.Random(seed)
    parts, total = [], 0
    while total < size:
        part = blank * rnd.randrange(1, every) + rnd.choice((b" ", b"\t")) + b"\n"
        parts.append(part)
        total += len(part)
    return b"".join(parts)[:size]


def _gzip(path: Path, pieces: Iterable[bytes]) -> Path:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        for piece in pieces:
            out.write(packer.compress(piece))
        out.write(packer.flush())
    return path


def _zstd(path: Path, pieces: Iterable[bytes]) -> Path:
    with path.open("wb") as out, zstandard.ZstdCompressor(level=1).stream_writer(out) as packer:
        for piece in pieces:
            packer.write(piece)
    return path


def _ratio(path: Path, out_bytes: int) -> float:
    return out_bytes / path.stat().st_size


def _read(path: Path, limits: Limits | None = None) -> tuple[list, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    kw = {"limits": limits} if limits is not None else {}
    return list(iter_records(path, diagnostics=diagnostics, **kw)), diagnostics


def _only_the_bound(diagnostics: list[Diagnostic], path: Path, at: int = STOP) -> None:
    (problem,) = diagnostics
    assert problem.path == str(path) and problem.offset == at
    assert problem.message == (
        f"{BOUND + 1} bytes of blank lines or empty messages came out of this compressed "
        "stream, over the max_blank_bytes limit of 64 MiB; likely a decompression bomb; "
        "rest of file skipped"
    )


SIZE = 80 * MiB  # past the bound, well under the 4 GiB budget
BLOCK = 4 * MiB  # repeated: distinct enough that gzip's 32 KiB window finds no repeat


@pytest.fixture(scope="module")
def newlines_gz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    block = _noise(BLOCK, 8000)
    path = _gzip(tmp_path_factory.mktemp("gz") / "newlines.jsonl.gz", [block] * (SIZE // BLOCK))
    assert 300 < _ratio(path, SIZE) < Limits().max_compression_ratio
    return path


def test_a_gzip_of_newlines_under_the_ratio_cap_stops_at_the_blank_bound(newlines_gz) -> None:
    records, diagnostics = _read(newlines_gz)
    assert records == []
    _only_the_bound(diagnostics, newlines_gz)


def test_a_zstd_of_blank_lines_under_the_ratio_cap_stops_at_the_blank_bound(tmp_path) -> None:
    # zstd finds repeats across megabytes: every block differs (the seed)
    blocks = [_noise(BLOCK, 1500, seed=seed) for seed in range(SIZE // BLOCK)]
    path = _zstd(tmp_path / "blank.jsonl.zst", blocks)
    assert 100 < _ratio(path, SIZE) < Limits().max_compression_ratio
    records, diagnostics = _read(path)
    assert records == []
    _only_the_bound(diagnostics, path)


def test_a_gzip_of_spaces_without_a_newline_stops_at_the_blank_bound(tmp_path) -> None:
    # one line of white space longer than the record limit: blank, not an overlong record
    block = _noise(BLOCK, 8000, blank=b" ").replace(b"\n", b"\t")
    path = _gzip(tmp_path / "spaces.jsonl.gz", [block] * (SIZE // BLOCK))
    assert 300 < _ratio(path, SIZE) < Limits().max_compression_ratio
    records, diagnostics = _read(path)
    assert records == []
    _only_the_bound(diagnostics, path)


def _runs() -> list[bytes]:
    return jsonl(record(SEED_RUNS)).splitlines(keepends=True)


def test_blank_runs_between_records_count_together_and_stop_the_rest(tmp_path) -> None:
    """Runs under the bound each, over it together: an attacker cannot reset it with a record."""
    first, second, third, *_ = _runs()
    run = _noise(40 * MiB, 8000)
    path = _gzip(tmp_path / "runs.jsonl.gz", [first, run, second, run, third])
    records, diagnostics = _read(path)
    assert [r.line for r in records] == [1, 2 + run.count(b"\n")]  # the third is not reached
    (problem,) = diagnostics
    assert problem.offset == len(first) + len(run) + len(second) + (BOUND + 1 - len(run))
    assert "over the max_blank_bytes limit of 64 MiB" in problem.message


def test_white_space_under_the_bound_loses_nothing(tmp_path) -> None:
    lines = _runs()
    pieces = [part for line in lines for part in (line, _noise(MiB, 8000))]
    path = _gzip(tmp_path / "padded.jsonl.gz", pieces)
    records, diagnostics = _read(path, Limits(max_blank_bytes=len(lines) * MiB))
    assert (len(records), diagnostics) == (len(lines), [])


def test_compressed_empty_messages_count_as_blank(tmp_path) -> None:
    """Zero words (empty length-prefixed messages) are the protobuf framing's blank lines."""
    first, second, *_ = (frame(line.strip()) for line in _runs())  # JSON bodies, framed
    path = tmp_path / "empties.pb.gz"
    path.write_bytes(_gzip_bytes(first + bytes(4 * MiB) + second))
    limits = Limits(max_blank_bytes=2 * MiB, max_compression_ratio=10**6)  # (zeros: 1030:1)
    records, diagnostics = _read(path, limits)
    assert [r.offset for r in records] == [0]
    (problem,) = diagnostics
    assert "over the max_blank_bytes limit of 2 MiB" in problem.message
    assert problem.message.endswith("rest of file skipped")


def _gzip_bytes(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def test_a_plain_file_is_not_bounded_by_blank_runs(tmp_path) -> None:
    first, second, *_ = _runs()
    path = tmp_path / "plain.jsonl"
    path.write_bytes(first + b"\n" * (3 * MiB) + second)
    records, diagnostics = _read(path, Limits(max_blank_bytes=MiB))
    assert ([r.line for r in records], diagnostics) == ([1, 3 * MiB + 2], [])


@pytest.mark.parametrize("layout", ["blank, record", "newline, record, blank, record"])
def test_a_plain_file_starting_with_a_newline_is_sniffed_in_one_buffer_of_memory(
    layout: str, tmp_path: Path
) -> None:
    """A file that starts with a newline may be protobuf (``\\n`` is its first byte), so its
    first ``max_record_bytes`` were sniffed, then read again. That sample was parsed as JSON
    whole (``orjson`` reserves twelve times its length), read through a second buffer as
    large, and handed out by slicing, one copy of what was left per read: seconds per megabyte
    and hundreds of megabytes for a file of newlines."""
    first, second, *_ = _runs()
    path = tmp_path / "blank.jsonl"
    if layout == "blank, record":
        path.write_bytes(b"\n" * (32 * MiB) + first)
        lines = [32 * MiB + 1]
    else:
        path.write_bytes(b"\n" + first + b"\n" * (32 * MiB) + second)
        lines = [2, 32 * MiB + 3]
    tracemalloc.start()
    try:
        records, diagnostics = _read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ([r.line for r in records], diagnostics) == (lines, [])
    room = Limits().max_record_bytes  # (``read`` of that much reserves it, then shrinks)
    assert peak < room + 8 * MiB, f"peak {peak / MiB:.0f} MiB for a 32 MiB file"


def test_the_default_blank_bound_is_64_mib() -> None:
    assert Limits().max_blank_bytes == BOUND


def test_read_spans_and_read_traces_stop_at_the_bound(newlines_gz) -> None:
    for read in (read_spans, read_traces):
        diagnostics: list[Diagnostic] = []
        assert list(read([str(newlines_gz)], diagnostics=diagnostics)) == []
        _only_the_bound(diagnostics, newlines_gz)


SUITE = suite_yaml(
    recorded_refund_case(
        "match", "required_tools", evaluators=[{"name": "tool_call_precision", "threshold": 1.0}]
    ),
    name="refund-agent",
)


@pytest.mark.parametrize(
    "command",
    [["eval", "--workers", "1"], ["eval", "--workers", "2"], ["convert"]],
    ids=["eval-1-worker", "eval-2-workers", "convert"],
)
def test_the_cli_skips_the_stream_with_one_line_and_reads_the_rest(
    command: list[str], newlines_gz: Path, tmp_path: Path
) -> None:
    good = tmp_path / "ok.jsonl"
    good.write_bytes(jsonl(record(SEED_RUNS[:1])))
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    args = [*command, "-q", str(suite)] if command[0] == "eval" else command
    done = subprocess.run(
        [TOOLTRAIL, *args, str(newlines_gz), str(good)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    lines = [line for line in done.stderr.splitlines() if line]
    assert lines == [
        f"{newlines_gz}@{STOP}: {BOUND + 1} bytes of blank lines or empty messages came out of "
        "this compressed stream, over the max_blank_bytes limit of 64 MiB; likely a "
        "decompression bomb; rest of file skipped"
    ]
    # the good file is still read: 3 = skipped input and nothing failed (1 for convert)
    assert done.returncode == (3 if command[0] == "eval" else 1)
    if command[0] == "convert":
        assert len(done.stdout.splitlines()) == 1
