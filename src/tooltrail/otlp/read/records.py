"""Reading OTLP trace files record by record: sniffing, framings, paths.

A *record* is one request: a JSON line, one length-prefixed message, or a whole file that
holds a single JSON document or a single protobuf message. Format is detected by content:
zstd or gzip magic (whole-file compression, decompressed as a stream), ``{`` (JSON lines, or
one JSON document), else length-prefixed protobuf (each message possibly zstd/gzip-compressed
on its own, protobuf or JSON inside), falling back to a single un-prefixed message.
"""

from __future__ import annotations

import glob
import io
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.jsonproblems import JSON_ARRAY, is_json_array, json_line_problem
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.otlpjson import parse_json, spans_from_json
from tooltrail.otlp.decode.pb import spans_from_bytes
from tooltrail.otlp.decode.span import Diagnostic, Interest, Span
from tooltrail.otlp.read.streams import (
    COMPRESSION_ERRORS,
    GZIP_MAGIC,
    ZSTD_MAGIC,
    BlankBudget,
    BudgetExceeded,
    DecompressionBudget,
    LimitExceeded,
    PrefixedRaw,
    decompress_record,
    decompressed,
    peek,
    read_exactly,
)

_SKIP_CHUNK = 1 << 20
#: The read buffer for the JSON lines of a plain regular file (here and in the batch pass's
#: ranges). ``readline`` finds the end of a line held in its buffer with one ``memchr``, but
#: scans the bytes it reads past the buffer one by one (CPython's ``_buffered_readline``):
#: through the 64 KiB buffer of ``peek``, a collector's request of a few hundred spans (800 kB
#: a line) cost 5 instructions a byte. Not for a pipe or a decompressed stream: filling a
#: buffer waits for all of it, and reads ahead of a decompression limit.
LINES_BUFFER_BYTES = 4 << 20
_WHITESPACE = b" \t\r\n\xef\xbb\xbf"  # and a UTF-8 byte order mark
#: Leading ``_WHITESPACE``, measured without copying what follows it (``lstrip`` would).
_LEADING_WHITESPACE = re.compile(b"[" + re.escape(_WHITESPACE) + b"]*")
#: What ``bytes.isspace`` counts: a line of these only is blank.
_BLANK = b" \t\n\r\x0b\x0c"
#: A buffer's worth of newlines and of zero bytes, to compare whole buffers of padding with.
_NEWLINES = b"\n" * _SKIP_CHUNK
_ZEROS = bytes(_SKIP_CHUNK)
#: Name endings picked up when walking a directory; named files are read whatever their name.
DUMP_SUFFIXES = (
    ".json",
    ".jsonl",
    ".ndjson",
    ".pb",
    ".bin",
    ".otlp",
    ".proto",
    ".zst",
    ".zstd",
    ".gz",
)


@dataclass(slots=True)
class Record:
    """One request read from a file, and where it starts."""

    path: str
    #: 0-based position of the record in its file.
    index: int
    #: 1-based line for JSON lines, else ``None``.
    line: int | None
    #: Byte offset of the record in the (decompressed) stream, for binary framings.
    offset: int | None
    spans: list[Span]

    @property
    def origin(self) -> str:
        if self.line is not None:
            return f"{self.path}:{self.line}"
        return f"{self.path}@{self.offset}" if self.offset is not None else self.path


class _NotOtlp(Exception):
    """The file's first record is JSON but not an OTLP document (skipped in directory walks)."""


def expand_paths(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    diagnostics: list[Diagnostic] | None = None,
    *,
    unreadable: list[Diagnostic] | None = None,
) -> Iterator[tuple[str, bool]]:
    """Files to read, as ``(path, named)``: ``named`` is False for files found in a directory.

    ``-`` is stdin; directories are walked recursively (files ending in ``DUMP_SUFFIXES``);
    glob patterns are expanded (``**`` recurses). A path matching nothing is a diagnostic.
    A directory that cannot be listed is a diagnostic too, in ``unreadable`` when given (its
    files are skipped input, not a path that names nothing), else in ``diagnostics``; so is
    a FIFO, socket or device, named or found, which is never opened: reading a FIFO with no
    writer blocks for ever, and the batch pass reads its inputs more than once.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    skipped = unreadable if unreadable is not None else diagnostics

    def regular(path: str) -> bool:
        kind = not_regular(path)
        if kind is not None and skipped is not None:
            skipped.append(Diagnostic(path, None, None, f"{NOT_REGULAR} ({kind}): skipped unread"))
        return kind is None

    def cannot_list(exc: OSError) -> None:
        if skipped is not None:
            where = exc.filename if exc.filename is not None else "?"
            reason = f"cannot list this directory ({exc.strerror or exc}): its files were skipped"
            skipped.append(Diagnostic(os.fsdecode(where), None, None, reason))

    for item in paths:
        text = os.fspath(item)
        if text == "-":
            yield text, True
        elif os.path.isdir(text):
            for root, dirs, files in os.walk(text, onerror=cannot_list):
                dirs.sort()
                for name in sorted(files):
                    if name.lower().endswith(DUMP_SUFFIXES) and not name.startswith("."):
                        found = os.path.join(root, name)
                        if regular(found):
                            yield found, False
        elif os.path.exists(text):
            if regular(text):
                yield text, True
        elif glob.has_magic(text):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches and diagnostics is not None:
                diagnostics.append(Diagnostic(text, None, None, "no file matches this pattern"))
            for match in matches:
                if os.path.isdir(match):
                    yield from expand_paths([match], diagnostics, unreadable=unreadable)
                elif regular(match):
                    yield match, True
        elif diagnostics is not None:
            diagnostics.append(Diagnostic(text, None, None, "no such file or directory"))


#: How a skipped FIFO, socket or device is reported; read a pipe as ``-`` instead.
NOT_REGULAR = "not a regular file"
_KINDS = (
    (stat.S_ISFIFO, "a FIFO; pipe it to standard input as -"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_regular(path: str) -> str | None:
    """What ``path`` is when it is not a regular file (following links), else ``None``; also
    ``None`` when it cannot be looked at (opening it then says why)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return _kind(mode)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def read_spans(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    interest: Interest | None = None,
) -> Iterator[Span]:
    """Every span in ``paths`` (files, directories, globs, ``-`` for stdin), streaming.

    Bad records are appended to ``diagnostics`` and reading goes on. Attributes and events
    are decoded lazily; problems found then are appended to ``diagnostics`` too. With an
    ``interest``, spans outside it come as ``SpanHead`` (ids, times, status, no attributes).
    """
    signal = TRACES if interest is None else _traces(interest)
    for path, named in expand_paths(paths, diagnostics):
        for record in file_records(path, limits, diagnostics, named, signal):
            yield from record.spans


def iter_records(
    path: str | os.PathLike[str],
    *,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    interest: Interest | None = None,
) -> Iterator[Record]:
    """The records of one file (or ``-``), in file order, with their line or byte offset.
    With an ``interest``, spans outside it come as ``SpanHead`` (see ``read_spans``)."""
    signal = TRACES if interest is None else _traces(interest)
    return file_records(os.fspath(path), limits, diagnostics, True, signal)


def _traces(interest: Interest | None) -> tuple[Any, Any]:
    """How trace records are decoded: from a parsed JSON document, and from protobuf bytes."""

    def from_json(doc: Any, where: Where) -> list[Any]:
        return spans_from_json(doc, where, lazy=True, interest=interest)

    def from_bytes(data: bytes, where: Where) -> list[Any]:
        return spans_from_bytes(data, where, lazy=True, interest=interest)

    return from_json, from_bytes


TRACES = _traces(None)


def file_records(
    path: str,
    limits: Limits,
    diagnostics: list[Diagnostic] | None,
    named: bool,
    signal: tuple[Any, ...] = TRACES,
) -> Iterator[Record]:
    """Records of one file; ``signal`` decodes them (spans by default, log records too)."""

    def report(line: int | None, offset: int | None, message: str) -> None:
        if diagnostics is not None:
            diagnostics.append(Diagnostic(path, line, offset, message))

    try:
        if path == "-":
            stream: IO[bytes] = sys.stdin.buffer
            size = None
        else:
            stream = _open_regular(path)
            size = os.fstat(stream.fileno()).st_size
    except OSError as exc:
        report(None, None, f"cannot open: {exc.strerror or exc}")
        return
    except _NotRegular as exc:
        report(None, None, f"{NOT_REGULAR} ({exc}): skipped unread")
        return
    try:
        reader = _FileReader(path, stream, size, limits, diagnostics, report, signal)
        try:
            yield from reader.records()
        except _NotOtlp as exc:
            if named:
                report(1, None, str(exc))
        except LimitExceeded as exc:
            report(None, reader.position(), f"{exc}; rest of file skipped")
        except COMPRESSION_ERRORS as exc:
            report(
                None, reader.position(), f"corrupt compressed data ({exc}); rest of file skipped"
            )
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


class _NotRegular(Exception):
    """A path named directly (``iter_records``) that is a FIFO, socket or device."""


def _open_regular(path: str) -> IO[bytes]:
    """``path`` opened for reading, without blocking: a FIFO with no writer would block
    ``open`` for ever, so it is opened non-blocking and refused when it is not a regular file
    (which ``expand_paths`` already leaves out; this covers a path given to ``iter_records``,
    or replaced after it was listed)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise _NotRegular(kind)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)  # noqa: SIM115 - the caller closes it
    except BaseException:
        os.close(fd)
        raise


#: How every protobuf request starts: field 1 (``resource_spans``), length-delimited. JSON
#: reads that byte as white space, and the length bytes after it may be white space or ``{``
#: too (``\n{``: a first ResourceSpans of 123 bytes; ``\n \n{``: of 32 bytes, whose Resource
#: is 123). Files starting so that they look like JSON are looked at twice.
_PROTOBUF_FIRST_BYTE = b"\n"


#: A file that starts with this many bytes of white space is blank lines, not protobuf, and is
#: not sniffed further (which reads ``max_record_bytes``). Read as protobuf, white space bytes
#: make only ``resource_spans`` of at most 32 bytes each, without ``scope_spans`` (tag
#: ``0x12``): no exporter writes thousands of those before its spans.
_BLANK_START = 64 << 10


def _looks_like_json_but_may_be_protobuf(head: bytes) -> bool:
    """Whether ``head`` (a record's or file's first bytes) starts as protobuf does and reads as
    JSON or white space after its white space: only then is a closer look needed."""
    return head[:1] == _PROTOBUF_FIRST_BYTE and head.lstrip(_WHITESPACE)[:1] in (b"{", b"")


def _protobuf_not_json(sample: bytes) -> bool:
    """Whether a file starting like JSON after a newline (its first ``max_record_bytes``) is one
    protobuf traces message rather than JSON: it parses as one, with spans, and neither the
    whole sample nor its first non-blank line parses as JSON.

    The first line is tried first, and white space is passed over, not parsed: ``orjson``
    reserves about twelve times the length of what it is given, 770 MB for a sample of 64 MiB,
    which only a pretty-printed document (whose first line is not JSON) needs."""
    start = _LEADING_WHITESPACE.match(sample).end()  # type: ignore[union-attr]
    if start == len(sample):
        return False  # only white space: it holds no span
    view = memoryview(sample)
    end = sample.find(b"\n", start)
    for text in (view[start : end if end != -1 else len(sample)], view[start:]):
        try:
            orjson.loads(text)
            return False
        except orjson.JSONDecodeError:
            pass
    try:
        message = TracesData.FromString(sample)
    except (ProtobufDecodeError, RecursionError, ValueError):
        return False
    return any(scope.spans for group in message.resource_spans for scope in group.scope_spans)


def is_json_record(body: bytes) -> bool:
    """Whether a record (or the start of a file) is OTLP/JSON rather than protobuf: ``{`` after
    white space, unless it is a protobuf message that only starts like that (``\n{``,
    ``\n \n{``, ...)."""
    start = _LEADING_WHITESPACE.match(body).end()  # type: ignore[union-attr]
    if body[start : start + 1] != b"{":
        return False
    return not (_looks_like_json_but_may_be_protobuf(body) and _protobuf_not_json(body))


class _FileReader:
    """Reads one file's records; ``records()`` is a generator."""

    def __init__(
        self,
        path: str,
        stream: IO[bytes],
        size: int | None,
        limits: Limits,
        diagnostics: list[Diagnostic] | None,
        report: Any,
        signal: tuple[Any, ...],
    ) -> None:
        self.from_json, self.from_bytes = signal[0], signal[1]
        #: Optional: reads a raw JSON line itself, or returns ``None`` to have it parsed.
        self.from_json_line = signal[2] if len(signal) > 2 else None
        self.path = path
        self.stream = stream
        self.size = size
        self.limits = limits
        self.diagnostics = diagnostics
        self.report = report
        self.offset = 0
        self.index = 0
        self.budget = DecompressionBudget(limits)
        #: Blank bytes a whole-file compressed stream may still yield; ``None``: a plain file.
        self.blank: BlankBudget | None = None
        #: Where to stop: the end of a byte range (``framed_range``); ``None``: the stream's end.
        self.end: int | None = None
        #: Where the length-prefixed record being read begins.
        self.record_start = 0

    def position(self) -> int:
        return self.offset

    def where(self, line: int | None, offset: int | None) -> Where:
        return Where(self.path, line, offset, self.limits, self.diagnostics)

    def records(self) -> Iterator[Record]:
        head, stream = peek(self.stream, 4)
        if not head:
            return
        stream, codec = decompressed(stream, head, self.limits, self.budget)
        size = self.size
        if codec is not None:
            size = None
            self.blank = BlankBudget(self.limits)
            head, stream = peek(stream, 4)
        first = head.lstrip(_WHITESPACE)[:1]
        if _looks_like_json_but_may_be_protobuf(head):
            start, stream = peek(stream, _BLANK_START)
            if not (len(start) == _BLANK_START and start.isspace()):
                sample, stream = peek(stream, self.limits.max_record_bytes + 1)
                if _protobuf_not_json(sample):
                    yield from self._binary(stream, head, size)
                    return
        if first == b"{" or (not first and head):
            if codec is None and size is not None:
                stream = io.BufferedReader(stream, buffer_size=LINES_BUFFER_BYTES)  # type: ignore[type-var]
            yield from self._json(stream)
        elif head:
            yield from self._binary(stream, head, size)

    # --- JSON lines / one JSON document --------------------------------------------------

    def _json(self, stream: IO[bytes]) -> Iterator[Record]:
        limit = self.limits.max_record_bytes
        line_no = 0
        first = True
        while True:
            start = self.offset
            line = stream.readline(limit + 1)
            if not line:
                return
            line_no += 1
            self.offset += len(line)
            if len(line) > limit and not line.endswith(b"\n"):
                blank = line.isspace()
                if blank:
                    self._count_blank(len(line))
                self.offset += self._skip_line(stream, blank)
                self.report(
                    line_no, None, f"line longer than the {limit} byte record limit; skipped"
                )
                first = False
                continue
            if line.isspace():  # (not empty here; no copy of a long line, unlike strip)
                room = self.blank.room() - len(line) if self.blank is not None else None
                skipped, lines = skip_blank_lines(stream, room)
                self.offset += skipped
                line_no += lines
                self._count_blank(len(line) + skipped)
                continue
            if self.from_json_line is not None:
                found = self.from_json_line(line, self.where(line_no, None))
                if found is not None:
                    self.index += 1
                    yield Record(self.path, self.index - 1, line_no, None, found)
                    first = False
                    continue
            try:
                doc = parse_json(line)
            except DecodeError as exc:
                if first:
                    first = False
                    doc, stream = self._whole_document(stream, line)
                    if doc is not None:
                        yield from self._json_record(doc, line_no, start, first=True)
                        return
                self.report(line_no, None, json_line_problem(line, exc.reason))
                continue
            yield from self._json_record(doc, line_no, start, first=first)
            first = False

    def _whole_document(self, stream: IO[bytes], line: bytes) -> tuple[Any, IO[bytes]]:
        """When the first line is not JSON, the whole file may be one (pretty-printed)
        document. Returns it, or ``None`` and a stream that yields the bytes read ahead."""
        limit = self.limits.max_record_bytes
        rest = read_exactly(stream, limit + 1 - len(line))
        if not rest:
            return None, stream
        if len(line) + len(rest) <= limit:
            try:
                return parse_json(line + rest), stream
            except DecodeError:
                pass
        return None, io.BufferedReader(PrefixedRaw(rest, stream))

    def _json_record(self, doc: Any, line_no: int, start: int, first: bool) -> Iterator[Record]:
        where = self.where(line_no, None)
        try:
            spans = self.from_json(doc, where)
        except DecodeError as exc:
            problem = DecodeError(JSON_ARRAY, field="(document)") if isinstance(doc, list) else exc
            if first and problem.field in ("resourceSpans", "resourceLogs", "(document)"):
                raise _NotOtlp(f"not an OTLP traces file: {problem.reason}") from None
            self.report(line_no, None, f"{problem}")
            return
        self.index += 1
        yield Record(self.path, self.index - 1, line_no, None, spans)

    def _count_blank(self, n: int) -> None:
        """Count ``n`` bytes of white space or empty messages: in a compressed stream, past
        ``max_blank_bytes`` of them the rest of the input is skipped (``LimitExceeded``)."""
        if self.blank is not None:
            self.blank.take(n)

    def _skip_line(self, stream: IO[bytes], blank: bool = False) -> int:
        """Consume the rest of an overlong line; one that started blank counts as blank."""
        skipped = 0
        while True:
            chunk = stream.readline(_SKIP_CHUNK)
            skipped += len(chunk)
            if blank:
                self._count_blank(len(chunk))
            if not chunk or chunk.endswith(b"\n"):
                return skipped

    # --- protobuf: length-prefixed, or one message -----------------------------------------

    def _binary(self, stream: IO[bytes], head: bytes, size: int | None) -> Iterator[Record]:
        limit = self.limits.max_record_bytes
        n = int.from_bytes(head[:4], "big") if len(head) == 4 else -1
        framed = 0 <= n <= limit and (size is None or 4 + n <= size)
        if not framed:
            yield from self._single(stream, size)
            return
        yield from self.framed(stream, first=True)

    def framed(self, stream: IO[bytes], first: bool) -> Iterator[Record]:
        """The length-prefixed records from ``self.offset`` to ``self.end`` (or the stream's
        end): the one loop that reads a length prefix. ``first``: the file's start, where a
        record that does not read may be a single un-prefixed message instead."""
        limit = self.limits.max_record_bytes
        end = self.end
        while end is None or self.offset < end:
            start = self.record_start = self.offset
            prefix = read_exactly(stream, 4)
            if not prefix:
                return
            if len(prefix) < 4:
                self.report(None, start, f"truncated length prefix ({len(prefix)} of 4 bytes)")
                return
            n = int.from_bytes(prefix, "big")
            if n == 0:  # an empty message; a run of them (zero bytes) is skipped in bulk
                room = self.blank.room() - 4 if self.blank is not None else None
                if end is not None:
                    room = end - start - 4 if room is None else min(room, end - start - 4)
                zeros = 4 + skip_zero_words(stream, room)
                self.offset += zeros
                self._count_blank(zeros)
                continue
            if n > limit:
                self.report(
                    None, start, f"record of {n} bytes exceeds the {limit} byte limit; skipped"
                )
                if end is not None:  # a range of a regular file: jumped over
                    stream.seek(start + 4 + n)
                elif not self._skip(stream, n):
                    self.report(None, start, "file ends inside the oversized record")
                    return
                self.offset += 4 + n
                first = False
                continue
            body = read_exactly(stream, n)
            self.offset += 4 + len(body)
            if len(body) < n:
                if first:
                    yield from self._single_from(prefix + body, 0)
                    return
                self.report(None, start, f"truncated record: {len(body)} of {n} bytes")
                return
            record, problem = self._framed_record(body, start)
            if problem and first:
                rest = read_exactly(stream, limit + 1 - 4 - n)
                data = prefix + body + rest
                if len(data) <= limit and self._parses(data):
                    yield from self._single_from(data, 0)
                    return
                stream = io.BufferedReader(PrefixedRaw(rest, stream))
            first = False
            if problem:
                self.report(None, start, problem)
            elif record is not None:
                yield record

    def _parses(self, data: bytes) -> bool:
        try:
            self.from_bytes(data, Where(self.path, None, 0, self.limits, None))
        except DecodeError:
            return False
        return True

    def _framed_record(self, body: bytes, start: int) -> tuple[Record | None, str]:
        """A length-prefixed record's spans, or the reason it could not be read."""
        try:
            if body.startswith(ZSTD_MAGIC) or body.startswith(GZIP_MAGIC):
                body = decompress_record(body, self.limits.max_record_bytes, self.budget)
            where = self.where(None, start)
            if is_json_record(body):
                spans = self.from_json(parse_json(body), where)
            else:
                spans = self.from_bytes(body, where)
        except DecodeError as exc:
            return None, str(exc)
        except BudgetExceeded:
            raise  # the input's budget: the rest of the file is not read
        except LimitExceeded as exc:
            return None, f"{exc}; record skipped"
        except COMPRESSION_ERRORS as exc:
            return None, f"corrupt compressed record ({exc}); skipped"
        self.index += 1
        return Record(self.path, self.index - 1, None, start, spans), ""

    def _skip(self, stream: IO[bytes], n: int) -> bool:
        while n > 0:
            chunk = stream.read(min(n, _SKIP_CHUNK))
            if not chunk:
                return False
            n -= len(chunk)
        return True

    def _single(self, stream: IO[bytes], size: int | None) -> Iterator[Record]:
        limit = self.limits.max_record_bytes
        data = read_exactly(stream, limit + 1)
        if len(data) > limit:
            if is_json_array(data):
                raise _NotOtlp(f"not an OTLP traces file: {JSON_ARRAY}")
            self.report(
                None, 0, f"single message larger than the {limit} byte record limit; skipped"
            )
            return
        yield from self._single_from(data, 0)

    def _single_from(self, data: bytes, start: int) -> Iterator[Record]:
        try:
            spans = self.from_bytes(data, self.where(None, start))
        except DecodeError as exc:
            if start == 0 and is_json_array(data):
                raise _NotOtlp(f"not an OTLP traces file: {JSON_ARRAY}") from None
            self.report(
                None, start, f"neither length-prefixed nor a single OTLP message: {exc.reason}"
            )
            return
        self.index += 1
        yield Record(self.path, self.index - 1, None, start, spans)


def framed_range(
    path: str,
    stream: IO[bytes],
    start: int,
    end: int | None,
    limits: Limits,
    diagnostics: list[Diagnostic],
    signal: tuple[Any, ...],
) -> Iterator[tuple[Record, int]]:
    """The length-prefixed records of bytes ``start`` to ``end`` of a regular file (``stream``
    is at ``start``; ``end=None``: to its end), each with the offset just past it, through the
    file reader's own loop. A decompression budget spent ends the range with a diagnostic."""

    def report(line: int | None, offset: int | None, message: str) -> None:
        diagnostics.append(Diagnostic(path, line, offset, message))

    reader = _FileReader(path, stream, None, limits, diagnostics, report, signal)
    reader.offset, reader.end = start, end
    try:
        for record in reader.framed(stream, first=False):
            yield record, reader.offset
    except BudgetExceeded as exc:
        report(None, reader.record_start, f"{exc}; rest of chunk skipped")


def skip_blank_lines(stream: IO[bytes], limit: int | None = None) -> tuple[int, int]:
    """Consume the blank lines at the head of ``stream`` (a buffered reader) in bulk, up to
    and including the last newline of the run, and at most ``limit`` bytes (a line boundary);
    returns (bytes, lines) consumed. What is left starts a line that is not blank, or is the
    end of the stream (or of ``limit``).

    Called only after a blank line, so lines of data never pay for it; a run of millions of
    blank lines (padding, a bomb of newlines) costs a comparison or an ``isspace`` per
    buffer, not one ``readline`` per line."""
    skipped = lines = 0
    peek_ = getattr(stream, "peek", None)
    while peek_ is not None:
        buf = peek_(_SKIP_CHUNK)[:_SKIP_CHUNK]
        # A buffer of newlines only is compared at memcmp speed (30 times ``isspace``, which
        # is three times ``lstrip`` of six characters), and its lines need no count.
        newlines = buf == _NEWLINES[: len(buf)]
        if newlines or buf.isspace():
            blank = len(buf)
        else:
            blank = len(buf) - len(buf.lstrip(_BLANK))
        take = buf.rfind(b"\n", 0, blank) + 1
        if limit is not None:
            take = min(take, limit - skipped)
        if take <= 0:
            break
        stream.read(take)
        skipped += take
        lines += take if newlines else buf.count(b"\n", 0, take)
        if take < blank or blank < len(buf):
            break
    return skipped, lines


def skip_zero_words(stream: IO[bytes], limit: int | None = None) -> int:
    """Consume zero bytes (empty length-prefixed messages), four at a time so framing stays
    aligned, and at most ``limit`` bytes; returns the count."""
    skipped = 0
    peek_ = getattr(stream, "peek", None)
    while peek_ is not None:
        buf = peek_(_SKIP_CHUNK)[:_SKIP_CHUNK]
        if buf == _ZEROS[: len(buf)]:  # (memcmp speed; ``lstrip`` is a hundred times slower)
            zeros = len(buf)
        else:
            zeros = len(buf) - len(buf.lstrip(b"\0"))
        if limit is not None:
            zeros = min(zeros, limit - skipped)
        take = zeros - zeros % 4
        if take <= 0:
            break
        stream.read(take)
        skipped += take
        if take < len(buf):
            break
    return skipped
