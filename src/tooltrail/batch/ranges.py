"""Reading one chunk: the records of a file, or of a byte range of it, with their place.

This is a thin adapter: ``tooltrail.otlp`` reads whole files only (``iter_records``), so a
byte range of a JSON-lines or length-prefixed file is read here with its public decoders
(``decode_request``, ``decode_json_request``) and its record decompression. Diagnostics name
the file and the absolute line (JSON lines) or byte offset (protobuf), as a whole-file read does.

Spans are read with ``dialects.INTEREST``, exactly as ``tooltrail.convert.read_traces`` reads
them: a plain span (an HTTP call, a query) comes as a ``SpanHead``, whose attributes and events
are never decoded, since no dialect reader looks at them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO

from tooltrail import dialects
from tooltrail.batch.chunks import Chunk, Extent
from tooltrail.otlp import (
    DEFAULT_LIMITS,
    DecodeError,
    Diagnostic,
    Limits,
    Span,
    SpanHead,
)
from tooltrail.otlp.jsonproblems import json_line_problem
from tooltrail.otlp.mixed import decode_mixed_json, decode_mixed_request, iter_mixed_records
from tooltrail.otlp.records import is_json_record, skip_blank_lines, skip_zero_words
from tooltrail.otlp.streams import (
    COMPRESSION_ERRORS,
    GZIP_MAGIC,
    ZSTD_MAGIC,
    BudgetExceeded,
    DecompressionBudget,
    LimitExceeded,
    decompress_record,
)

#: Read buffer: collector lines run to megabytes, and ``readline`` through the default 8 KB
#: buffer spent ~10% of reading a JSON-lines chunk copying and joining the pieces.
READ_BUFFER_BYTES = 1 << 20
#: The spans the converter reads in full; the others come as ``SpanHead``.
INTEREST = dialects.INTEREST


def read_chunk(
    chunk: Chunk, limits: Limits | None, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, Sequence[Span | SpanHead]]]:
    """The records of ``chunk``, each as (where it lies, its spans). Bad records become
    diagnostics; reading goes on."""
    limits = limits or DEFAULT_LIMITS
    if chunk.framing == "whole":
        yield from _read_whole(chunk, limits, diagnostics)
        return
    try:
        stream = open(chunk.path, "rb", buffering=READ_BUFFER_BYTES)  # noqa: SIM115 - closed below
    except OSError as exc:
        diagnostics.append(Diagnostic(chunk.path, None, None, f"cannot open: {exc.strerror}"))
        return
    with stream:
        stream.seek(chunk.start)
        if chunk.framing == "lines":
            yield from _read_lines(chunk, stream, limits, diagnostics)
        else:
            yield from _read_prefixed(chunk, stream, limits, diagnostics)


def _read_whole(
    chunk: Chunk, limits: Limits, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, Sequence[Span | SpanHead]]]:
    found: list[Diagnostic] = []
    read_any = False
    for record in iter_mixed_records(
        chunk.path, limits=limits, diagnostics=found, interest=INTEREST
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
    chunk: Chunk, stream: IO[bytes], limits: Limits, diagnostics: list[Diagnostic]
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
                line, origin=origin, limits=limits, diagnostics=diagnostics, interest=INTEREST
            )
        except DecodeError as exc:
            message = json_line_problem(line, str(exc)) if not exc.field else str(exc)
            diagnostics.append(Diagnostic(chunk.path, line_no, None, message))
            continue
        yield Extent(start, offset, line_no), spans


def _read_prefixed(
    chunk: Chunk, stream: IO[bytes], limits: Limits, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, Sequence[Span | SpanHead]]]:
    limit = limits.max_record_bytes
    budget = DecompressionBudget(limits)
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
        if n == 0:  # an empty message; a run of them (zero bytes) is skipped in bulk
            offset += skip_zero_words(stream, None if chunk.end is None else chunk.end - offset)
            continue
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
        try:
            spans = _decode_framed(body, limits, budget, diagnostics, chunk.path, start)
        except BudgetExceeded as exc:
            diagnostics.append(Diagnostic(chunk.path, None, start, f"{exc}; rest of chunk skipped"))
            return
        if spans is not None:
            yield Extent(start, offset), spans


def _decode_framed(
    body: bytes,
    limits: Limits,
    budget: DecompressionBudget,
    diagnostics: list[Diagnostic],
    path: str,
    start: int,
) -> Sequence[Span | SpanHead] | None:
    origin = f"{path}@{start}"
    try:
        if body.startswith(ZSTD_MAGIC) or body.startswith(GZIP_MAGIC):
            body = decompress_record(body, limits.max_record_bytes, budget)
        decode = decode_mixed_json if is_json_record(body) else decode_mixed_request
        return decode(
            body, origin=origin, limits=limits, diagnostics=diagnostics, interest=INTEREST
        )
    except DecodeError as exc:
        message = str(exc)
    except BudgetExceeded:
        raise
    except LimitExceeded as exc:
        message = f"{exc}; record skipped"
    except COMPRESSION_ERRORS as exc:
        message = f"corrupt compressed record ({exc}); skipped"
    diagnostics.append(Diagnostic(path, None, start, message))
    return None
