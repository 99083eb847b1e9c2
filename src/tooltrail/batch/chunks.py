"""Chunks: a file, or a byte range of it that starts and ends at record boundaries.

Large uncompressed dumps (JSON lines, length-prefixed protobuf with or without per-message
compression) are cut into chunks of about ``chunk_bytes`` so several workers share one file
and each holds only its own chunk's traces. Whole-file compressed streams and single-message
files cannot be cut: they are one chunk, read by ``tooltrail.otlp.iter_records``.

This is a thin adapter: ``tooltrail.otlp`` reads whole files only, so cutting at record
boundaries and reading one range is done here with its public decoders
(``decode_request``, ``decode_json_request``) and its record decompression. Diagnostics name
the file and the absolute line (JSON lines) or byte offset (protobuf), as a whole-file read does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import IO, Literal

import orjson

from tooltrail.otlp import (
    DEFAULT_LIMITS,
    DecodeError,
    Diagnostic,
    Limits,
    Span,
    decode_json_request,
    decode_request,
    expand_paths,
    iter_records,
)
from tooltrail.otlp.streams import (
    COMPRESSION_ERRORS,
    GZIP_MAGIC,
    ZSTD_MAGIC,
    LimitExceeded,
    decompress_record,
)

#: Default chunk size: big enough that per-task overhead vanishes, small enough that a worker's
#: memory stays a few hundred megabytes at most.
DEFAULT_CHUNK_BYTES = 32 << 20
#: Never cut finer than this, whatever the worker count.
MIN_CHUNK_BYTES = 4 << 20

Framing = Literal["whole", "lines", "prefixed"]
_BLOCK = 1 << 20
_WHITESPACE = b" \t\r\n"


class InputError(ValueError):
    """An input path that names nothing: a usage error, not a skipped record."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A unit of work. ``start``/``end`` are byte offsets for ``lines`` and ``prefixed``, and
    record indices for ``whole`` (``end=None``: to the end of the file)."""

    index: int
    path: str
    framing: Framing = "whole"
    start: int = 0
    end: int | None = None
    #: 1-based line number of the first record (JSON lines), for diagnostics.
    first_line: int = 1
    #: Bytes of input the chunk covers, for progress.
    size: int = 0
    #: False for a file found by walking a directory: one that is not OTLP is skipped quietly.
    named: bool = True

    def narrowed(self, extent: Extent) -> Chunk:
        """The same chunk limited to ``extent`` (records of a few traces, for a merge)."""
        return replace(self, start=extent.start, end=extent.end, first_line=extent.line or 1)


@dataclass(frozen=True, slots=True)
class Extent:
    """Where some traces' records lie inside a chunk, in that chunk's coordinates."""

    start: int
    end: int
    line: int | None = None

    def union(self, other: Extent) -> Extent:
        first = self if self.start <= other.start else other
        return Extent(first.start, max(self.end, other.end), first.line)


def plan_chunks(
    paths: Sequence[str],
    *,
    chunk_bytes: int | None = None,
    parallelism: int = 1,
    limits: Limits = DEFAULT_LIMITS,
) -> list[Chunk]:
    """The chunks of ``paths`` (files, directories, globs) in file order.

    ``chunk_bytes`` defaults to ``auto_chunk_bytes`` of the total input size and
    ``parallelism``. Raises ``InputError`` when a path names nothing. The report does not
    depend on the plan: rows are ordered by first appearance in the input, and traces cut
    across chunks are merged.
    """
    problems: list[Diagnostic] = []
    files = list(expand_paths(list(paths), problems))
    if problems:
        raise InputError("; ".join(str(p) for p in problems))
    sizes = [_size(path) for path, _named in files]
    if chunk_bytes is None:
        chunk_bytes = auto_chunk_bytes(sum(sizes), parallelism)
    chunks: list[Chunk] = []
    for (path, named), size in zip(files, sizes, strict=True):
        for framing, start, end, line in _cut(path, size, chunk_bytes, limits):
            chunk_size = (end if end is not None else size) - start
            chunks.append(Chunk(len(chunks), path, framing, start, end, line, chunk_size, named))
    return chunks


def auto_chunk_bytes(total_bytes: int, parallelism: int) -> int:
    """About four chunks per worker, so workers finish together, within
    [``MIN_CHUNK_BYTES``, ``DEFAULT_CHUNK_BYTES``] so memory per worker stays bounded."""
    if parallelism <= 1:
        return DEFAULT_CHUNK_BYTES
    return max(MIN_CHUNK_BYTES, min(DEFAULT_CHUNK_BYTES, total_bytes // (4 * parallelism)))


def read_chunk(
    chunk: Chunk, limits: Limits | None, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, list[Span]]]:
    """The records of ``chunk``, each as (where it lies, its spans). Bad records become
    diagnostics; reading goes on."""
    limits = limits or DEFAULT_LIMITS
    if chunk.framing == "whole":
        yield from _read_whole(chunk, limits, diagnostics)
        return
    try:
        stream = open(chunk.path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        diagnostics.append(Diagnostic(chunk.path, None, None, f"cannot open: {exc.strerror}"))
        return
    with stream:
        stream.seek(chunk.start)
        if chunk.framing == "lines":
            yield from _read_lines(chunk, stream, limits, diagnostics)
        else:
            yield from _read_prefixed(chunk, stream, limits, diagnostics)


# --- planning ----------------------------------------------------------------------------


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:
        return 0


def _cut(
    path: str, size: int, chunk_bytes: int, limits: Limits
) -> Iterator[tuple[Framing, int, int | None, int]]:
    """(framing, start, end, first line) per chunk of one file."""
    if size <= chunk_bytes or path == "-":
        yield "whole", 0, None, 1
        return
    cuts: list[tuple[int, int, int]] | None = None
    framing: Framing = "whole"
    with open(path, "rb") as stream:
        head = stream.read(4)
        stream.seek(0)
        if head.startswith(ZSTD_MAGIC) or head.startswith(GZIP_MAGIC):
            pass  # one compressed stream: cannot start reading in the middle
        elif head.lstrip(_WHITESPACE)[:1] == b"{":
            framing, cuts = "lines", _line_cuts(stream, size, chunk_bytes, limits)
        else:
            framing, cuts = "prefixed", _prefix_cuts(stream, size, chunk_bytes)
    if cuts is None:
        yield "whole", 0, None, 1
        return
    for start, end, line in cuts:
        yield framing, start, end, line


def _line_cuts(
    stream: IO[bytes], size: int, chunk_bytes: int, limits: Limits
) -> list[tuple[int, int, int]] | None:
    """Cuts at newlines, with the line number each chunk starts at; ``None`` when the file
    is one (pretty-printed) JSON document rather than JSON lines."""
    first = stream.readline(limits.max_record_bytes + 1)
    stream.seek(0)
    try:
        doc = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None  # one pretty-printed document, or not JSON at all
    if not isinstance(doc, dict) or not ({"resourceSpans", "resource_spans"} & doc.keys()):
        return None  # not OTLP traces: the whole-file reader reports (or skips) it
    cuts: list[tuple[int, int, int]] = []
    start, line = 0, 1
    while start < size:
        target = start + chunk_bytes
        if target >= size:
            cuts.append((start, size, line))
            break
        stream.seek(target - 1)
        end = target - 1 + len(stream.readline())
        stream.seek(start)
        lines = _count_newlines(stream, end - start)
        cuts.append((start, end, line))
        start, line = end, line + lines
    return cuts


def _count_newlines(stream: IO[bytes], n: int) -> int:
    count = 0
    while n > 0:
        block = stream.read(min(n, _BLOCK))
        if not block:
            break
        count += block.count(b"\n")
        n -= len(block)
    return count


def _prefix_cuts(
    stream: IO[bytes], size: int, chunk_bytes: int
) -> list[tuple[int, int, int]] | None:
    """Cuts between length-prefixed records; ``None`` unless the prefixes tile the file."""
    cuts: list[tuple[int, int, int]] = []
    start = offset = 0
    while offset < size:
        prefix = stream.read(4)
        if len(prefix) < 4:
            return None
        n = int.from_bytes(prefix, "big")
        if offset + 4 + n > size:
            return None
        offset += 4 + n
        stream.seek(offset)
        if offset - start >= chunk_bytes:
            cuts.append((start, offset, 1))
            start = offset
    if start < size:
        cuts.append((start, size, 1))
    return cuts if len(cuts) > 1 else None


# --- reading -----------------------------------------------------------------------------


def _read_whole(
    chunk: Chunk, limits: Limits, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, list[Span]]]:
    found: list[Diagnostic] = []
    read_any = False
    for record in iter_records(chunk.path, limits=limits, diagnostics=found):
        read_any = True
        diagnostics.extend(found)
        found.clear()
        if record.index < chunk.start:
            continue
        if chunk.end is not None and record.index >= chunk.end:
            return
        yield Extent(record.index, record.index + 1, record.line), record.spans
    if not chunk.named and not read_any and all(_not_otlp(d) for d in found):
        return  # a stray non-OTLP file in a dump directory, as ``read_spans`` treats it
    diagnostics.extend(found)


def _not_otlp(diagnostic: Diagnostic) -> bool:
    return diagnostic.line == 1 and diagnostic.message.startswith("not an OTLP")


def _read_lines(
    chunk: Chunk, stream: IO[bytes], limits: Limits, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, list[Span]]]:
    limit = limits.max_record_bytes
    offset, line_no = chunk.start, chunk.first_line - 1
    end = chunk.end if chunk.end is not None else float("inf")
    while offset < end:
        line = stream.readline(limit + 1)
        if not line:
            return
        start = offset
        line_no += 1
        offset += len(line)
        if len(line) > limit and not line.endswith(b"\n"):
            rest = stream.readline()
            while rest and not rest.endswith(b"\n"):
                offset += len(rest)
                rest = stream.readline()
            offset += len(rest)
            diagnostics.append(
                Diagnostic(
                    chunk.path,
                    line_no,
                    None,
                    f"line longer than the {limit} byte record limit; skipped",
                )
            )
            continue
        if not line.strip():
            continue
        origin = f"{chunk.path}:{line_no}"
        try:
            spans = decode_json_request(
                line, origin=origin, limits=limits, diagnostics=diagnostics, lazy=True
            )
        except DecodeError as exc:
            diagnostics.append(Diagnostic(chunk.path, line_no, None, str(exc)))
            continue
        yield Extent(start, offset, line_no), spans


def _read_prefixed(
    chunk: Chunk, stream: IO[bytes], limits: Limits, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, list[Span]]]:
    limit = limits.max_record_bytes
    offset = chunk.start
    end = chunk.end if chunk.end is not None else float("inf")
    while offset < end:
        start = offset
        prefix = stream.read(4)
        if len(prefix) < 4:
            if prefix:
                diagnostics.append(Diagnostic(chunk.path, None, start, "truncated length prefix"))
            return
        n = int.from_bytes(prefix, "big")
        offset += 4 + n
        if n > limit:
            stream.seek(offset)
            diagnostics.append(
                Diagnostic(
                    chunk.path,
                    None,
                    start,
                    f"record of {n} bytes exceeds the {limit} byte limit; skipped",
                )
            )
            continue
        body = stream.read(n)
        if len(body) < n:
            diagnostics.append(
                Diagnostic(chunk.path, None, start, f"truncated record: {len(body)} of {n} bytes")
            )
            return
        spans = _decode_framed(
            body, f"{chunk.path}@{start}", limits, diagnostics, chunk.path, start
        )
        if spans is not None:
            yield Extent(start, offset), spans


def _decode_framed(
    body: bytes, origin: str, limits: Limits, diagnostics: list[Diagnostic], path: str, start: int
) -> list[Span] | None:
    try:
        if body.startswith(ZSTD_MAGIC) or body.startswith(GZIP_MAGIC):
            body = decompress_record(body, limits.max_record_bytes)
        if body.lstrip(_WHITESPACE)[:1] == b"{":
            return decode_json_request(
                body, origin=origin, limits=limits, diagnostics=diagnostics, lazy=True
            )
        return decode_request(
            body, origin=origin, limits=limits, diagnostics=diagnostics, lazy=True
        )
    except DecodeError as exc:
        message = str(exc)
    except LimitExceeded as exc:
        message = f"{exc}; record skipped"
    except COMPRESSION_ERRORS as exc:
        message = f"corrupt compressed record ({exc}); skipped"
    diagnostics.append(Diagnostic(path, None, start, message))
    return None
