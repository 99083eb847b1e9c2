"""Reading one byte range of a file (as ``cuts`` cut it), or some records of a whole file,
with each record's place.

Diagnostics name the file and the absolute line (JSON lines) or byte offset (protobuf), as a
whole-file read does. Spans outside the caller's ``Interest`` come as ``SpanHead``, exactly as
``read_spans`` hands them out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Literal, Protocol

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.jsonproblems import json_line_problem
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.span import Diagnostic, Interest, Span, SpanHead
from tooltrail.otlp.read.decoders import RecordDecoders
from tooltrail.otlp.read.mixed import decode_mixed_json, iter_mixed_records, spans_and_logs
from tooltrail.otlp.read.records import LINES_BUFFER_BYTES, framed_range, skip_blank_lines

#: How a range is read: the whole file (records by index), JSON lines, or length-prefixed.
Framing = Literal["whole", "lines", "prefixed"]
#: Read buffer of a length-prefixed range, and the piece an overlong line is skipped by. (JSON
#: lines are read through ``LINES_BUFFER_BYTES``: collector lines run to megabytes, and
#: ``readline`` through the default 8 KB buffer spent ~10% of reading a JSON-lines chunk
#: copying and joining the pieces.)
READ_BUFFER_BYTES = 1 << 20


class Range(Protocol):
    """A part of a file to read. ``start``/``end`` are byte offsets for ``lines`` and
    ``prefixed``, and record indices for ``whole`` (``end=None``: to the end of the file)."""

    @property
    def path(self) -> str: ...
    @property
    def framing(self) -> Framing: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int | None: ...
    #: 1-based line number of the first record (JSON lines), for diagnostics.
    @property
    def first_line(self) -> int: ...
    #: False for a file found by walking a directory: one that is not OTLP is skipped quietly.
    @property
    def named(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Extent:
    """Where some records lie inside a range, in that range's coordinates (byte offsets and
    the first line, or record indices for a ``whole`` range)."""

    start: int
    end: int
    line: int | None = None

    def union(self, other: Extent) -> Extent:
        first = self if self.start <= other.start else other
        return Extent(first.start, max(self.end, other.end), first.line)


def read_range(
    part: Range,
    limits: Limits | None,
    diagnostics: list[Diagnostic],
    interest: Interest | None = None,
    decoders: RecordDecoders | None = None,
) -> Iterator[tuple[Extent, Sequence[Span | SpanHead]]]:
    """The records of ``part``, each as (where it lies, its spans). Bad records become
    diagnostics; reading goes on. A caller's ``decoders`` read records first
    (``read.decoders``)."""
    chunk = part
    limits = limits or DEFAULT_LIMITS
    if chunk.framing == "whole":
        yield from _read_whole(chunk, limits, diagnostics, interest, decoders)
        return
    try:
        buffering = LINES_BUFFER_BYTES if chunk.framing == "lines" else READ_BUFFER_BYTES
        stream = open(chunk.path, "rb", buffering=buffering)  # noqa: SIM115 - closed below
    except OSError as exc:
        diagnostics.append(Diagnostic(chunk.path, None, None, f"cannot open: {exc.strerror}"))
        return
    with stream:
        stream.seek(chunk.start)
        if chunk.framing == "lines":
            yield from _read_lines(chunk, stream, limits, diagnostics, interest, decoders)
        else:
            yield from _read_prefixed(chunk, stream, limits, diagnostics, interest, decoders)


def _read_whole(
    chunk: Range,
    limits: Limits,
    diagnostics: list[Diagnostic],
    interest: Interest | None,
    decoders: RecordDecoders | None,
) -> Iterator[tuple[Extent, Sequence[Span | SpanHead]]]:
    found: list[Diagnostic] = []
    read_any = False
    for record in iter_mixed_records(
        chunk.path, limits=limits, diagnostics=found, interest=interest, decoders=decoders
    ):
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
    chunk: Range,
    stream: IO[bytes],
    limits: Limits,
    diagnostics: list[Diagnostic],
    interest: Interest | None,
    decoders: RecordDecoders | None,
) -> Iterator[tuple[Extent, Sequence[Span | SpanHead]]]:
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
            rest = stream.readline(READ_BUFFER_BYTES)
            while rest and not rest.endswith(b"\n"):
                offset += len(rest)
                rest = stream.readline(READ_BUFFER_BYTES)
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
        if line.isspace():
            room = None if chunk.end is None else chunk.end - offset
            skipped, lines = skip_blank_lines(stream, room)
            offset += skipped
            line_no += lines
            continue
        origin = f"{chunk.path}:{line_no}"
        try:
            spans = decode_mixed_json(
                line,
                origin=origin,
                limits=limits,
                diagnostics=diagnostics,
                interest=interest,
                decoders=decoders,
            )
        except DecodeError as exc:
            message = json_line_problem(line, str(exc)) if not exc.field else str(exc)
            diagnostics.append(Diagnostic(chunk.path, line_no, None, message))
            continue
        yield Extent(start, offset, line_no), spans


def _read_prefixed(
    chunk: Range,
    stream: IO[bytes],
    limits: Limits,
    diagnostics: list[Diagnostic],
    interest: Interest | None,
    decoders: RecordDecoders | None,
) -> Iterator[tuple[Extent, Sequence[Span | SpanHead]]]:
    signal = spans_and_logs(interest, decoders)
    for record, end in framed_range(
        chunk.path, stream, chunk.start, chunk.end, limits, diagnostics, signal
    ):
        yield Extent(record.offset or 0, end), record.spans
