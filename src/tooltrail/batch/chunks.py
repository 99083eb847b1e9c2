"""Chunks: a file, or a byte range of it that starts and ends at record boundaries.

Large uncompressed dumps (JSON lines, length-prefixed protobuf with or without per-message
compression) are cut into chunks of about ``chunk_bytes`` so several workers share one file
and each holds only its own chunk's traces. Whole-file compressed streams and single-message
files cannot be cut: they are one chunk. ``tooltrail.batch.ranges`` reads a chunk.

Cutting needs to know where records end, which only ``tooltrail.otlp`` should know; it reads
whole files only, so this module is the thin adapter that finds the boundaries (newlines,
length prefixes) for the batch pass.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import IO, Literal

import orjson

from tooltrail.otlp import DEFAULT_LIMITS, Diagnostic, Limits, expand_paths
from tooltrail.otlp.records import is_json_record
from tooltrail.otlp.stores import is_store_document
from tooltrail.otlp.streams import GZIP_MAGIC, ZSTD_MAGIC

#: Default chunk size: big enough that per-task overhead vanishes, small enough that a worker's
#: memory stays a few hundred megabytes at most.
DEFAULT_CHUNK_BYTES = 32 << 20
#: Never cut finer than this, whatever the worker count.
MIN_CHUNK_BYTES = 4 << 20

Framing = Literal["whole", "lines", "prefixed"]
_BLOCK = 1 << 20
#: What is read after jumping over a large record: its successor's prefix and a little more.
_PREFIX_READ = 8 << 10
_PREFIX = struct.Struct(">I")
#: A run of whole zero words: empty length-prefixed messages.
_ZERO_WORDS = re.compile(rb"(?:\0\0\0\0)+")


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
        if head.startswith(b"\n{"):  # JSON, or a protobuf message that only starts like it
            head += stream.read(limits.max_record_bytes + 1 - len(head))
        stream.seek(0)
        if head.startswith(ZSTD_MAGIC) or head.startswith(GZIP_MAGIC):
            pass  # one compressed stream: cannot start reading in the middle
        elif is_json_record(head):
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
    if not isinstance(doc, dict) or not (
        {"resourceSpans", "resource_spans"} & doc.keys() or is_store_document(doc)
    ):
        return None  # not OTLP traces (nor Jaeger/Tempo): the whole-file reader reports it
    cuts: list[tuple[int, int, int]] = []
    start, line = 0, 1
    while start < size:
        target = start + chunk_bytes
        if target >= size:
            cuts.append((start, size, line))
            break
        end = _line_end(stream, target - 1)
        stream.seek(start)
        lines = _count_newlines(stream, end - start)
        cuts.append((start, end, line))
        start, line = end, line + lines
    return cuts


def _line_end(stream: IO[bytes], at: int) -> int:
    """The offset just past the first newline at or after ``at``, or the file's end; read in
    blocks, so a line of gigabytes is not held in memory."""
    stream.seek(at)
    while True:
        block = stream.read(_BLOCK)
        if not block:
            return at
        found = block.find(b"\n")
        if found != -1:
            return at + found + 1
        at += len(block)


def _count_newlines(stream: IO[bytes], n: int) -> int:
    count = 0
    while n > 0:
        block = stream.read(min(n, _BLOCK))
        if not block:
            break
        count += _newlines(block)
        n -= len(block)
    return count


#: Newlines looked for one by one in a block before counting the rest at once.
_FIND_AT_MOST = 256


def _newlines(block: bytes) -> int:
    """``block.count(b"\n")``, faster for the long lines of collector dumps: ``find`` skips to
    the next newline at memchr speed (several times ``count``'s), so a block of a few long lines
    costs a few calls; a block of many short lines is counted at once after the first few."""
    found = 0
    at = block.find(b"\n")
    while at != -1:
        found += 1
        if found == _FIND_AT_MOST:
            return found + block.count(b"\n", at + 1)
        at = block.find(b"\n", at + 1)
    return found


def _prefix_cuts(
    stream: IO[bytes], size: int, chunk_bytes: int
) -> list[tuple[int, int, int]] | None:
    """Cuts between length-prefixed records; ``None`` unless the prefixes tile the file.

    The prefixes are walked in blocks held in memory (a file of tiny records costs one read
    per block, not one per record), and a run of zero words (empty messages) is passed over
    at once; a large record is jumped over with a small read at its end, as before."""
    cuts: list[tuple[int, int, int]] = []
    start = offset = 0
    block, base = b"", 0  # ``block`` holds the file's bytes from ``base``
    unpack, zero_words = _PREFIX.unpack_from, _ZERO_WORDS.match
    while offset < size:
        at = offset - base
        if at + 4 > len(block):
            contiguous = at <= len(block) + _PREFIX_READ
            stream.seek(offset)
            block, base, at = stream.read(_BLOCK if contiguous else _PREFIX_READ), offset, 0
            if len(block) < 4:
                return None
        last = len(block) - 4
        while at <= last:  # the records whose prefix is in this block
            (n,) = unpack(block, at)
            if n:
                at += 4 + n
                offset = base + at
                if offset > size:
                    return None
                if offset - start >= chunk_bytes:
                    cuts.append((start, offset, 1))
                    start = offset
                continue
            run = zero_words(block, at)  # empty messages, passed over at once
            end = base + (run.end() if run else at + 4)
            offset = base + at
            while end - start >= chunk_bytes:  # a cut after the word that completes a chunk
                cut = offset + max(4, -(-(start + chunk_bytes - offset) // 4) * 4)
                cuts.append((start, cut, 1))
                start = offset = cut
            at = end - base
        offset = base + at
    if start < size:
        cuts.append((start, size, 1))
    return cuts if len(cuts) > 1 else None
