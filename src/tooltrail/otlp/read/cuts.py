"""Cutting a file into byte ranges that start and end at record boundaries, for the batch
planner: at newlines for JSON lines, between length prefixes for framed protobuf. A whole-file
compressed stream, a single message or one pretty-printed document cannot be cut and is one
range. ``ranges`` reads a range back.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import IO

import orjson

from tooltrail.otlp.decode.limits import Limits
from tooltrail.otlp.decode.stores import is_store_document
from tooltrail.otlp.read.ranges import Framing
from tooltrail.otlp.read.records import is_json_record
from tooltrail.otlp.read.streams import GZIP_MAGIC, ZSTD_MAGIC

_BLOCK = 1 << 20
#: What is read after jumping over a large record: its successor's prefix and a little more.
_PREFIX_READ = 8 << 10
_PREFIX = struct.Struct(">I")
#: A run of whole zero words: empty length-prefixed messages.
_ZERO_WORDS = re.compile(rb"(?:\0\0\0\0)+")


def cut_file(
    path: str, size: int, chunk_bytes: int, limits: Limits
) -> Iterator[tuple[Framing, int, int | None, int]]:
    """(framing, start, end, first line) of each range of about ``chunk_bytes`` of one file
    of ``size`` bytes; one ``whole`` range when it is small or cannot be cut."""
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
